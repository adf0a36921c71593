"""How the two channels' candidates become one ranking: the fusion every store uses.

The relevance of a candidate is ``s * V + (1 - s) * K``:

* ``V``, its vector score: the passage's cosine to the query plus ``head_weight`` times
  the cosine of its file's first chunk (the file's opening names what the whole file is
  about), shifted by 1 and divided by the best candidate's; with a multilingual encoder,
  placed between the lowest candidate's and the best's (``convex``'s ``spread``);
* ``K``, its BM25 score divided by the best keyword match's;
* ``s``, the vector channel's share, ``vector_share`` (0.7), scaled down while keyword
  matches lack vectors and for a query in CJK or naming a code like ``ERR-4471``
  (``vector_weight``, ``plan.QueryPlan.read_share``), and raised over code (below).

The dev collections do not agree on any per-query share: the per-query fusions and
reciprocal rank fusion measured against this one live in ``bench/fusions.py``
(docs/benchmarks.md has every lever measured).

In code (a file of a code suffix, or a passage that reads as code:
``code_text.reads_as_code``), a query's plain words are weak evidence: a function that
sorts need not say "sort", and many say "value" or "list". Unless the query names an identifier
(``terms.names_identifier``: ``parse_config``, ``__init__``, ``HttpClient``,
``os.path``), where the exact name is what finds it, the keyword channel's share shrinks
with the share of its matches that are code the vector channel can judge
(``prose_share``): over a folder of code at rest, the vector channel ranks alone; a query
in CJK, which the encoder does not read, keeps its words' say. (CoSQA dev, nDCG@10:
0.521 with the common fusion, 0.603 so, its vector channel's figure, as ``.py`` and as
``.txt``; functions looked up by name stay first 96 times in 100. No collection without
code can speak for it; it stays on the kept-aside CoSQA test set and the worst-case
target: docs/benchmarks.md, "Levers on evidence".)

A passage without a vector yet (indexing in progress) is not scored as if its cosine
were the lowest possible: an unknown vector score is estimated from what is known, its
file's first chunk when that has a vector, otherwise the median vector score of the
keyword candidates that have one (the passages most like it), and the vector channel's
share shrinks with the share of keyword matches that have a vector. Its ``score``
stays None.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.core.results import Channel, Found, Hit
from micro_rag_mcp.search.duplicates import Distinct
from micro_rag_mcp.search.terms import STOPWORDS

# How many of the best keyword matches tell how much of them is code (prose_share): each
# is read to see whether it reads as code, and a search has few milliseconds to spare.
CODE_SAMPLE = 50


@dataclass(frozen=True, slots=True)
class SearchParams:
    """The knobs of the fusion, with the defaults the benchmarks chose.

    Chosen on the dev collections at once, and checked leave-one-collection-out over
    nine captured sets; see docs/benchmarks.md for every lever tried and its effect.
    """

    depth: int = 200  # candidates taken from each channel
    vector_share: float = 0.7  # weight of the vector channel, the keyword gets the rest
    head_weight: float = 0.5  # weight of the file's first chunk in the vector score
    title_weight: float = 1.0  # BM25 weight of the title column against the text column
    judge_code: bool = True  # code's keyword matches give way to meaning (prose_share)
    channels: tuple[Channel, ...] = ("vector", "keyword")
    # Leave English stop words out of the keyword query: same hybrid quality, keyword-only
    # +0.2 nDCG@10, and half the FTS5 time (an OR with "the" matches nearly every chunk).
    drop_stopwords: bool = True
    stopwords: frozenset[str] = STOPWORDS
    whole_files: bool = True  # a long CJK query is also matched against whole files
    # The encoder reads every language (set by the engine from the loaded model): a query
    # in CJK is read by meaning too, the vector scores are spread (``convex``), and "no
    # good match" weighs its cosines on their own scale.
    multilingual_encoder: bool = False


@dataclass(frozen=True, slots=True)
class Candidates:
    """What the two channels proposed for one query, as any store gathers it.

    ``vector`` and ``keyword`` are the channels' hits best first (cosine; BM25 score,
    positive); ``cosine`` holds every candidate that has a vector, ``heads`` maps a
    candidate to the first chunk of its file, and ``head_cosine`` the cosines of heads
    that are not candidates themselves.
    """

    vector: Sequence[tuple[int, float]]
    keyword: Sequence[tuple[int, float]]
    cosine: Mapping[int, float]
    heads: Mapping[int, int]
    head_cosine: Mapping[int, float]
    vector_ran: bool
    keyword_ran: bool
    keyword_idf: float = 0.0  # the summed idf of the words the keyword channel searched
    read_share: float = 1.0  # the share of the query the encoder reads (cjk.read_share)
    code: frozenset[int] = frozenset()  # the keyword candidates that are code (of the best)
    identifier: bool = False  # the query names an identifier (terms.names_identifier)


@dataclass(frozen=True, slots=True)
class Ranking:
    """Candidates in fused order, with what a hit reports of each."""

    ranked: list[int]
    fused: dict[int, float]
    cosine: Mapping[int, float]
    found_by: dict[int, tuple[Channel, ...]]
    no_good_match: bool = False


def fuse(c: Candidates, params: SearchParams) -> Ranking:
    """The fusion every store uses: the same code, so scores mean the same on each."""
    found_by: dict[int, tuple[Channel, ...]] = {cid: ("vector",) for cid, _ in c.vector}
    for cid, _ in c.keyword:
        found_by[cid] = (*found_by.get(cid, ()), "keyword")
    vector_scores = vector_estimates(c, params.head_weight) if c.vector_ran else {}
    channels = int(c.vector_ran) + int(c.keyword_ran)
    prose = prose_share(c) if params.judge_code else 1.0
    k_share = (1.0 - params.vector_share * vector_weight(c)) * prose
    fused = convex(
        vector_scores,
        dict(c.keyword),
        vector_share=1.0 - k_share,
        channels=channels,
        spread=params.multilingual_encoder,
    )
    # Equal relevance (a query in CJK: every passage only the vector channel found) is
    # broken by the cosine.
    ranked = sorted(fused, key=lambda cid: (-fused[cid], -c.cosine.get(cid, -2.0), cid))
    weak = WEAK_COSINE_MULTILINGUAL if params.multilingual_encoder else WEAK_COSINE
    return Ranking(ranked, fused, c.cosine, found_by, no_good_match(c, weak))


# Calibrated on the dev sets' own queries and other collections', in English, German and
# Japanese (docs/benchmarks.md, "No good match in every language": bench.refusal).
WEAK_COSINE = 0.40  # a best cosine below this is no meaning match
# multilingual-e5-small's cosines lie between about 0.65 and 0.96 for any two texts: its
# bound (XQuAD-R de and JaQuAD, each other's questions foreign: answered 0 %, foreign 97 %
# and 100 % flagged; docs/benchmarks.md, "Ranking with e5-small"). A right answer in
# another language than the question scores lower (0.76 to 0.81) and is flagged too.
WEAK_COSINE_MULTILINGUAL = 0.81
WEAK_COVERAGE = 0.60  # a best BM25 below this share of the query's summed idf: no word match
# A query mostly in CJK, by its pairs alone: a folder that holds almost none of their
# weight. An English folder holds none of a Japanese question's; LeCaRD's answered case
# descriptions hold 0.022 or more in one passage (a passage holds part of a long query),
# JaQuAD's answered questions 0.2 or more.
WEAK_CJK_COVERAGE = 0.01


def no_good_match(c: Candidates, weak_cosine: float = WEAK_COSINE) -> bool:
    """Whether nothing found is a good match: no passage holds the query's rare words (the
    best BM25 is under ``WEAK_COVERAGE`` of what the query's words weigh together) and
    none is close in meaning (the best cosine is under ``weak_cosine``: ``WEAK_COSINE``,
    or ``WEAK_COSINE_MULTILINGUAL`` for e5's higher cosines). An absolute
    test, unlike ``relevance``, which is relative to the best. Without the vector channel
    (the model loading or unavailable) nothing is said: words alone flagged 23 % of
    Cranfield's answered questions. A query mostly in CJK, whose cosines cannot tell
    (an encoder that reads English only), is judged by its words alone, against
    ``WEAK_CJK_COVERAGE``: a Japanese question over an English folder was never flagged;
    so is a query mostly of a code (``ERR-4471``). The query's weight counts the words
    no passage holds only when they outweigh the held ones (``terms.query_weight``).
    """
    best = c.keyword[0][1] if c.keyword else 0.0
    coverage = best / c.keyword_idf if c.keyword_idf > 0 else 0.0
    if c.read_share < 0.5:
        return c.keyword_ran and coverage < WEAK_CJK_COVERAGE
    if not c.vector_ran or max(c.cosine.values(), default=-1.0) >= weak_cosine:
        return False
    return coverage < WEAK_COVERAGE


def prose_share(c: Candidates) -> float:
    """The share of the keyword matches the keyword channel speaks for: all of them when
    the query names an identifier, else all but the code that the vector channel judges
    (code with a vector, as far as the encoder reads the query: a query in CJK keeps its
    words' say), counted among its best ``CODE_SAMPLE``; 1 without keyword matches."""
    if c.identifier or not c.code or not c.keyword:
        return 1.0
    best = c.keyword[:CODE_SAMPLE]
    judged = sum(cid in c.code and cid in c.cosine for cid, _ in best)
    return 1.0 - c.read_share * judged / len(best)


def vector_estimates(c: Candidates, head_weight: float) -> dict[int, float]:
    """Every candidate's vector score, measured where it has a vector, else estimated.

    A keyword candidate without a vector gets its file's first chunk's cosine for its own
    (when that has a vector), otherwise the median vector score of the keyword
    candidates that have one; with none of those, of all the candidates.
    """
    scores = with_heads(c.cosine, c.heads, c.head_cosine, head_weight)
    missing = [cid for cid, _ in c.keyword if cid not in scores]
    if not missing or not scores:
        return scores
    known = {**c.head_cosine, **c.cosine}
    alike = [scores[cid] for cid, _ in c.keyword if cid in scores]
    neutral = statistics.median(alike or scores.values())
    for cid in missing:
        head = known.get(c.heads.get(cid, cid))
        scores[cid] = neutral if head is None else head * (1.0 + head_weight)
    return scores


def vector_weight(c: Candidates) -> float:
    """How much of its share the vector channel keeps for this query: as much as of the
    keyword matches has a vector (``known_share``), and of the query the English-only
    encoder reads. A query in Chinese or Japanese is ranked by its words alone: the
    encoder gives such passages cosines that do not follow their meaning (LeCaRD dev,
    nDCG@10: keyword 0.616, with the vector channel's 70 % 0.559, with 7 % 0.609); so is
    a query of a code, and one naming a code leans on its words (``terms.code_share``)."""
    return known_share(c) * (c.read_share if c.keyword else 1.0)


def known_share(c: Candidates) -> float:
    """The share of the keyword matches that have a vector (1 without keyword matches).

    The vector channel speaks only for those: while indexing runs, its share of the
    relevance shrinks with theirs, so an index with a tenth of its vectors ranks about as
    its keyword channel does, not by a tenth of its passages. With every vector made it
    is 1, and the fusion is what it is at rest.
    """
    if not c.keyword:
        return 1.0
    return sum(cid in c.cosine for cid, _ in c.keyword) / len(c.keyword)


def convex(
    vector: Mapping[int, float],
    keyword: Mapping[int, float],
    *,
    vector_share: float,
    channels: int = 2,
    spread: bool = False,
) -> dict[int, float]:
    """Fused relevance in [0, 1] of every candidate of either channel, with fixed shares.

    ``vector`` maps a candidate to its vector score (a cosine, at least -1, possibly with
    a bonus), ``keyword`` to its BM25 score (positive). Each is normalized by the best of
    its channel; a candidate absent from a channel gets 0 there. With ``channels == 1``
    only one channel ran and it gets the whole weight.

    ``spread``: the vector score runs from the lowest candidate's (0) to the best's (1),
    not from -1. multilingual-e5-small gives any two texts a cosine of about 0.7 to 0.95:
    shifted by 1, its candidates' scores all lie within a few hundredths of the best, and
    the keyword channel ranks alone whatever its share (XQuAD-R de, 300 questions, e5:
    vector channel 0.875 nDCG@10, keyword 0.756, fused 0.787 so, 0.872 spread). MiniLM's
    cosines are not bunched, and spreading them gives a German question's cosines, which
    it does not read, a say they lack (0.785 to 0.742): MiniLM keeps the shift by 1.
    """
    v_share = vector_share if channels == 2 else (1.0 if vector else 0.0)
    k_share = 1.0 - v_share
    low = min(vector.values(), default=0.0) if spread else -1.0
    v_span = max(vector.values(), default=0.0) - low
    k_best = max(keyword.values(), default=0.0)
    fused: dict[int, float] = {}
    for cid in vector.keys() | keyword.keys():
        v = 0.0
        if cid in vector:
            v = (vector[cid] - low) / v_span if v_span > 0 else 0.0
        k = keyword[cid] / k_best if cid in keyword and k_best > 0 else 0.0
        fused[cid] = v_share * v + k_share * k
    return fused


def with_heads(
    cosine: Mapping[int, float],
    heads: Mapping[int, int],
    head_cosine: Mapping[int, float],
    head_weight: float,
) -> dict[int, float]:
    """Each candidate's cosine plus ``head_weight`` times its file's first chunk's cosine."""
    if head_weight == 0:
        return dict(cosine)
    known = {**head_cosine, **cosine}
    return {
        cid: cos + head_weight * known.get(heads.get(cid, cid), cos) for cid, cos in cosine.items()
    }


def best_hits(
    fetch: Callable[[Sequence[int]], Mapping[int, StoredChunk]],
    ranking: Ranking,
    top_k: int,
    score_threshold: float,
) -> Found:
    """Rows of the best ranked chunks that pass the threshold, a window at a time; a
    passage that repeats one ranked above it is named there, not counted (duplicates)."""
    hits = Distinct()
    cut = 0
    window = max(2 * top_k, 20)
    ranked = ranking.ranked
    for at in range(0, len(ranked), window):
        batch = ranked[at : at + window]
        rows = fetch(batch)
        for cid in batch:
            row = rows.get(cid)
            if row is None:  # a vector whose chunk was deleted after the file was saved
                continue
            score = ranking.cosine.get(cid)
            channels = ranking.found_by[cid]
            if score is not None and score < score_threshold and "keyword" not in channels:
                cut += 1
                continue
            # Past top_k, the rest of the window fetched is still looked at for repeats.
            hits.add(Hit(row, score, ranking.fused[cid], channels), keep=len(hits) < top_k)
        if len(hits) == top_k:
            return Found(hits.hits(), ranking.no_good_match)
    return Found(hits.hits(), ranking.no_good_match, cut=not hits and cut > 0)
