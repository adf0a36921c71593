"""Hybrid retrieval: FAISS and FTS5 candidates, fused on their scores.

Each channel proposes its best ``depth`` chunks. The fused relevance of a candidate is a
convex combination of its two normalized scores:

* vector: the chunk's cosine to the query plus ``head_weight`` times the cosine of the
  first chunk of its file (the file's opening names what the whole file is about: a
  title, a cover page, an abstract), shifted by 1 and divided by the best candidate's,
  so it lies in (0, 1];
* keyword: the chunk's BM25 score divided by the best keyword match's, in (0, 1].

Scores, not ranks, are fused: a rare exact term that the keyword channel finds far ahead
of everything else keeps that lead, where reciprocal rank fusion would flatten it to
"rank 1" and let merely similar chunks overtake it. A channel that finds nothing adds
nothing to anyone. Reciprocal rank fusion is kept as ``fusion="rrf"`` for comparison.

``score`` is always the cosine similarity of the chunk to the query, whichever channel
found it, so ``score_threshold`` means one thing. The threshold cuts only passages the
keyword channel did not find: a passage that contains the query's words is kept on that
evidence (an identifier, a name, a word in a script the vector model does not know can
have a low cosine and still be exactly what was asked for). A chunk with no vector yet
(indexing in progress) carries no score.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from micro_rag_mcp.catalog import Catalog, StoredChunk
from micro_rag_mcp.cjk import cjk_query
from micro_rag_mcp.keywords import keyword_hits as keyword_channel
from micro_rag_mcp.keywords import or_query
from micro_rag_mcp.results import Hit
from micro_rag_mcp.vectors import VectorStore

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MAX_QUERY_TERMS = 64
_TERM = re.compile(r"\w+", re.UNICODE)

# Lucene's English stop words (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET).
_LUCENE_STOP = (
    "a an and are as at be but by for if in into is it no not of on or such that the "
    "their then there these they this to was will with"
)
STOPWORDS: frozenset[str] = frozenset(_LUCENE_STOP.split())


@dataclass(frozen=True, slots=True)
class SearchParams:
    """The knobs of the fusion, with the defaults the benchmarks chose.

    Chosen on every dev set at once (SciFact train, Cranfield, sec10q_dev and the
    generated identifier set) with 1000/200 chunks; see docs/benchmarks.md for every
    lever tried and its effect.
    """

    depth: int = 200  # candidates taken from each channel
    fusion: str = "convex"  # "convex" (scores) or "rrf" (ranks)
    vector_share: float = 0.7  # convex: weight of the vector channel, the keyword gets the rest
    head_weight: float = 0.5  # convex: weight of the file's first chunk in the vector score
    rrf_k: float = 20.0  # rrf only
    vector_weight: float = 1.0  # rrf only
    keyword_weight: float = 1.25  # rrf only
    title_weight: float = 1.0  # BM25 weight of the title column against the text column
    channels: tuple[str, ...] = ("vector", "keyword")
    # Leave English stop words out of the keyword query: same hybrid quality, keyword-only
    # +0.2 nDCG@10, and half the FTS5 time (an OR with "the" matches nearly every chunk).
    drop_stopwords: bool = True
    stopwords: frozenset[str] = STOPWORDS


def fts_query(
    text: str, max_terms: int = MAX_QUERY_TERMS, stopwords: frozenset[str] = frozenset()
) -> str | None:
    """An FTS5 expression that matches any word of ``text``, safe for any input.

    Every term is a quoted string, so FTS5 syntax in the query (``NEAR(``, ``AND``, ``*``,
    ``-``, ``"``) is only ever text. Words in ``stopwords`` are left out unless the text
    has no other word. Returns None when the text has no word at all.
    """
    terms = query_terms(text, max_terms, stopwords)
    return or_query(terms) if terms else None


def query_terms(
    text: str, max_terms: int = MAX_QUERY_TERMS, stopwords: frozenset[str] = frozenset()
) -> list[str]:
    """The distinct words of ``text`` a keyword channel looks for, lower-cased, in order.

    Words in ``stopwords`` are left out unless the text has no other word.
    """
    seen: dict[str, None] = {}
    stopped: dict[str, None] = {}
    for term in _TERM.findall(text.lower()):
        term = term.strip("_")
        if not term or term in seen:
            continue
        if term in stopwords:
            if len(stopped) < max_terms:
                stopped[term] = None
            continue
        seen[term] = None
        if len(seen) >= max_terms:
            break
    return list(seen or stopped)


def rrf(rankings: Sequence[tuple[Sequence[int], float]], k: float) -> dict[int, float]:
    """Reciprocal rank fusion: sum over channels of weight / (k + rank), ranks from 1."""
    fused: dict[int, float] = {}
    for ids, weight in rankings:
        for rank, cid in enumerate(ids, 1):
            fused[cid] = fused.get(cid, 0.0) + weight / (k + rank)
    return fused


def convex(
    vector: Mapping[int, float],
    keyword: Mapping[int, float],
    *,
    vector_share: float,
    channels: int = 2,
) -> dict[int, float]:
    """Fused relevance in [0, 1] of every candidate of either channel.

    ``vector`` maps a candidate to its vector score (a cosine, at least -1, possibly with
    a bonus), ``keyword`` to its BM25 score (positive). Each is normalized by the best of
    its channel; a candidate absent from a channel gets 0 there. With ``channels == 1``
    only one channel ran and it gets the whole weight.
    """
    v_share = vector_share if channels == 2 else (1.0 if vector else 0.0)
    k_share = 1.0 - v_share
    v_best = max(vector.values(), default=0.0) + 1.0
    k_best = max(keyword.values(), default=0.0)
    fused: dict[int, float] = {}
    for cid in vector.keys() | keyword.keys():
        v = (vector[cid] + 1.0) / v_best if cid in vector and v_best > 0 else 0.0
        k = keyword[cid] / k_best if cid in keyword and k_best > 0 else 0.0
        fused[cid] = v_share * v + k_share * k
    return fused


@dataclass(frozen=True, slots=True)
class VectorSide:
    """The vector channel's part of one search: the store, the query's vector, its hits
    (vector keys, see ``vector_text``). Chunks are found through the keys they carry."""

    store: VectorStore
    query_vector: npt.NDArray[np.float32]
    hits: list[tuple[int, float]]

    def chunk_hits(self, catalog: Catalog, limit: int) -> list[tuple[int, float]]:
        """The hits as chunks, best first: every chunk of a hit's text, up to ``limit``."""
        chunks = catalog.chunks_of_keys([key for key, _ in self.hits])
        found = [(cid, cos) for key, cos in self.hits for cid in chunks.get(key, ())]
        return found[:limit]

    def similarity(self, catalog: Catalog, ids: Sequence[int]) -> dict[int, float]:
        """The query's cosine to each given chunk whose text has a vector."""
        keys = catalog.keys_of(ids)
        cosine = self.store.similarity(self.query_vector, list(set(keys.values())))
        return {cid: cosine[key] for cid, key in keys.items() if key in cosine}


def hybrid_search(
    catalog: Catalog,
    vectors: VectorStore | None,
    query: str,
    query_vector: npt.NDArray[np.float32] | None,
    *,
    top_k: int,
    score_threshold: float,
    params: SearchParams = SearchParams(),
) -> list[Hit]:
    """The best ``top_k`` chunks for the query, from every channel that is available.

    Candidates are fused first; rows (text and citation) are then fetched best first, a
    window at a time, until ``top_k`` pass the threshold, all in one read snapshot.
    """
    side = None
    if query_vector is not None and vectors is not None and "vector" in params.channels:
        side = VectorSide(vectors, query_vector, vectors.search(query_vector, params.depth))
    return search_beside(
        catalog, query, lambda: side, top_k=top_k, score_threshold=score_threshold, params=params
    )


def search_beside(
    catalog: Catalog,
    query: str,
    vector_side: Callable[[], VectorSide | None],
    *,
    top_k: int,
    score_threshold: float,
    params: SearchParams = SearchParams(),
) -> list[Hit]:
    """``hybrid_search`` whose vector channel runs elsewhere: ``vector_side`` waits for it
    (None: it did not run). It is asked once the keyword channel is done, so a caller that
    starts the query's embedding and vector search in another thread first has both
    channels run at once (SQLite, onnxruntime and FAISS let go of the GIL).
    """
    with catalog.snapshot():
        keyword_hits, keyword_ran = keyword_candidates(catalog, query, params)
        side = vector_side() if "vector" in params.channels else None
        vector_hits = side.chunk_hits(catalog, params.depth) if side is not None else []
        cosine = dict(vector_hits)
        heads: dict[int, int] = {}
        head_cosine: dict[int, float] = {}
        if side is not None:
            # Keyword candidates get their cosine too: the threshold and the fusion use it.
            unscored = [cid for cid, _ in keyword_hits if cid not in cosine]
            cosine.update(side.similarity(catalog, unscored))
            if params.fusion != "rrf" and params.head_weight != 0:
                heads = catalog.head_ids(list(cosine))
                missing = [h for h in set(heads.values()) if h not in cosine]
                head_cosine = side.similarity(catalog, missing)
        ranking = fuse(
            Candidates(
                vector=vector_hits,
                keyword=keyword_hits,
                cosine=cosine,
                heads=heads,
                head_cosine=head_cosine,
                vector_ran=side is not None,
                keyword_ran=keyword_ran,
            ),
            params,
        )
        return best_hits(catalog.fetch, ranking, top_k, score_threshold)


def keyword_candidates(
    catalog: Catalog, query: str, params: SearchParams
) -> tuple[list[tuple[int, float]], bool]:
    """The keyword channel's best ``depth`` chunks with their BM25 scores, and whether it
    ran at all (the query has a word, or a CJK run, and the channel is on)."""
    if "keyword" not in params.channels:
        return [], False
    stopwords = params.stopwords if params.drop_stopwords else frozenset()
    terms = query_terms(query, stopwords=stopwords)
    hits: list[tuple[int, float]] = []
    if terms:
        hits = keyword_channel(catalog, terms, params.depth, (params.title_weight, 1.0))
    cjk = cjk_query(query)
    if cjk is not None:  # CJK runs are found by their bigrams (see cjk.py)
        hits = _merged(hits, catalog.cjk_search(cjk, params.depth))
    return hits, bool(terms) or cjk is not None


def _merged(
    first: Sequence[tuple[int, float]], second: Sequence[tuple[int, float]]
) -> list[tuple[int, float]]:
    """Two keyword result lists as one: a chunk in both gets the sum, best first."""
    scores = dict(first)
    for cid, score in second:
        scores[cid] = scores.get(cid, 0.0) + score
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


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


@dataclass(frozen=True, slots=True)
class Ranking:
    """Candidates in fused order, with what a hit reports of each."""

    ranked: list[int]
    fused: dict[int, float]
    cosine: Mapping[int, float]
    found_by: dict[int, tuple[str, ...]]


def fuse(c: Candidates, params: SearchParams) -> Ranking:
    """The fusion every store uses: the same code, so scores mean the same on each."""
    found_by: dict[int, tuple[str, ...]] = {cid: ("vector",) for cid, _ in c.vector}
    for cid, _ in c.keyword:
        found_by[cid] = (*found_by.get(cid, ()), "keyword")
    if params.fusion == "rrf":
        fused = rrf(
            [
                ([cid for cid, _ in c.vector], params.vector_weight),
                ([cid for cid, _ in c.keyword], params.keyword_weight),
            ],
            params.rrf_k,
        )
    else:
        vector_scores = (
            with_heads(c.cosine, c.heads, c.head_cosine, params.head_weight) if c.vector_ran else {}
        )
        fused = convex(
            vector_scores,
            dict(c.keyword),
            vector_share=params.vector_share,
            channels=int(c.vector_ran) + int(c.keyword_ran),
        )
    ranked = sorted(fused, key=lambda cid: (-fused[cid], cid))
    return Ranking(ranked, fused, c.cosine, found_by)


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
) -> list[Hit]:
    """Rows of the best ranked chunks that pass the threshold, a window at a time."""
    hits: list[Hit] = []
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
                continue
            hits.append(Hit(row, score, ranking.fused[cid], channels))
            if len(hits) == top_k:
                return hits
    return hits
