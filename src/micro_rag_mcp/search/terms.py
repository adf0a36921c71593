"""The words a query is searched for: stop words, the distinctive terms, what they weigh."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

# Lucene's English stop words (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET).
_LUCENE_STOP = (
    "a an and are as at be but by for if in into is it no not of on or such that the "
    "their then there these they this to was will with"
)


STOPWORDS: frozenset[str] = frozenset(_LUCENE_STOP.split())


COMMON_SHARE = 0.5  # a term in more than this share of chunks has a floored idf in FTS5


# A query of more distinct words than this (a pasted log, a whole page) is searched for
# its rarest ones: they carry the BM25 weight, and every word searched costs its postings.
MAX_SEARCHED_TERMS = 128
# Distinct words a query is read for: a bound against hostile input only (a paragraph has
# far fewer); the keyword channel then searches the rarest (``keywords.searched_terms``).
MAX_QUERY_TERMS = 1024
_TERM = re.compile(r"\w+", re.UNICODE)
# A word that names something in code: an inner underscore (parse_config), a dunder name
# (__init__), an inner capital (HttpClient, writeBoolean) or a dotted name (os.path,
# np.array). ASCII only: CJK text joined by an underscore is no identifier.
_IDENTIFIER = re.compile(
    r"[A-Za-z0-9]_+[A-Za-z0-9]|__[A-Za-z]\w*__|[a-z][A-Z]|[A-Za-z_][A-Za-z0-9_]+\.[A-Za-z_]"
)

# A code a folder names things by: letters then three digits or more (ERR-4471,
# INC0012345, CVE-2021-44228), or a number of three parts or more (4.2.1, 10.0.0.12).
_CODE = re.compile(
    r"(?<![\w.])(?:[A-Za-z]+[-_#]?[0-9]{3,}(?:[-_.][A-Za-z0-9]+)*|[0-9]+(?:\.[0-9]+){2,})(?!\w)"
)


def names_identifier(text: str) -> bool:
    """Whether the query names an identifier of code (see ``_IDENTIFIER``): a query in
    plain words (``sort a dict by value``) does not."""
    return _IDENTIFIER.search(text) is not None


def code_share(text: str) -> float:
    """The share of the query's letters and digits, stop words aside, that spell a code
    (``_CODE``: an error code, a ticket, a clause or version number): 1 for
    ``ERR-4471``, about half for ``how to fix ERR-4471``, 0 for a query of words. The
    encoder makes little of a code; its exact spelling is what finds it
    (``plan.QueryPlan.read_share``)."""
    coded = sum(ch.isalnum() for m in _CODE.finditer(text) for ch in m.group())
    if not coded:
        return 0.0
    words = _TERM.findall(text.lower())
    letters = sum(len(w.strip("_")) for w in words if w.strip("_") not in STOPWORDS)
    return min(coded / letters, 1.0) if letters else 0.0


def searched_terms(
    terms: Sequence[str], shares: Mapping[str, float], *, alone: bool = True
) -> list[str]:
    """The words a keyword channel searches: the distinctive ones (in at most
    ``COMMON_SHARE`` of the chunks); a query of common words only keeps them all, unless
    they are not ``alone``: a CJK clause beside them (searched by its pairs alone,
    ``search.plan``) is what the query asks, not ``libraries`` in a folder of notes on
    libraries.

    Past ``MAX_SEARCHED_TERMS`` words, the rarest of those the sample saw are kept, then
    the unseen: a word of a long query that is in no sampled chunk is most often in no
    chunk at all (a name in a pasted case description), and would spend the budget on
    nothing (LeCaRD: nDCG@10 0.43 so, 0.40 with the rarest whatever they match).
    """
    distinctive = [t for t in terms if shares.get(t, 0.0) <= COMMON_SHARE]
    kept = distinctive or (list(terms) if alone else [])
    if len(kept) <= MAX_SEARCHED_TERMS:
        return kept
    order = sorted(kept, key=lambda t: (shares.get(t, 0.0) == 0.0, shares.get(t, 0.0)))
    chosen = set(order[:MAX_SEARCHED_TERMS])
    return [t for t in kept if t in chosen]


def idf_sum(terms: Sequence[str], shares: Mapping[str, float], chunks: int) -> float:
    """What the terms weigh together in FTS5's BM25: the sum of their idf (a term in
    half the chunks or more weighs nothing)."""
    return sum(term_idf(shares.get(t, 0.0) * chunks, chunks) for t in terms)


def term_idf(having: float, chunks: float) -> float:
    """A term's idf in FTS5's BM25, found in ``having`` of ``chunks`` chunks (0 for one
    in half of them or more)."""
    return max(math.log((chunks - having + 0.5) / (having + 0.5)), 0.0)


def held_weight(terms: Sequence[str], shares: Mapping[str, float], chunks: int) -> float:
    """``query_weight`` of the terms by their shares of the chunks (``idf_sum``): a term
    of share 0 is one no chunk holds (of those sampled: every chunk of a folder of up to
    10,000)."""
    return query_weight(
        [(term_idf(shares.get(t, 0.0) * chunks, chunks), shares.get(t, 0.0) > 0.0) for t in terms]
    )


def query_weight(parts: Iterable[tuple[float, bool]]) -> float:
    """What a query's words weigh together, that its best passage's BM25 is measured
    against (``fusion.no_good_match``): each word's idf, with whether some passage holds
    it. A word no passage holds counts only when such words outweigh the held ones.

    A question often holds a word the folder lacks (a typo, a German compound, a word
    the passage puts otherwise), and being in no passage such a word weighs the
    most: it cut an answered question's coverage below the bound (2 of 9 answered German
    questions flagged). A question of another field holds mostly such words, and still
    weighs them all. (docs/benchmarks.md, "No good match".)
    """
    held = unheld = 0.0
    for weight, is_held in parts:
        if is_held:
            held += weight
        else:
            unheld += weight
    return held + unheld if unheld > held else held


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
