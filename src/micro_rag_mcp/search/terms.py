"""The words a query is searched for: stop words, the distinctive terms, what they weigh."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

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


def names_identifier(text: str) -> bool:
    """Whether the query names an identifier of code (see ``_IDENTIFIER``): a query in
    plain words (``sort a dict by value``) does not."""
    return _IDENTIFIER.search(text) is not None


def searched_terms(terms: Sequence[str], shares: Mapping[str, float]) -> list[str]:
    """The words a keyword channel searches: the distinctive ones (in at most
    ``COMMON_SHARE`` of the chunks); a query of common words only keeps them all.

    Past ``MAX_SEARCHED_TERMS`` words, the rarest of those the sample saw are kept, then
    the unseen: a word of a long query that is in no sampled chunk is most often in no
    chunk at all (a name in a pasted case description), and would spend the budget on
    nothing (LeCaRD: nDCG@10 0.43 so, 0.40 with the rarest whatever they match).
    """
    distinctive = [t for t in terms if shares.get(t, 0.0) <= COMMON_SHARE]
    kept = distinctive or list(terms)
    if len(kept) <= MAX_SEARCHED_TERMS:
        return kept
    order = sorted(kept, key=lambda t: (shares.get(t, 0.0) == 0.0, shares.get(t, 0.0)))
    chosen = set(order[:MAX_SEARCHED_TERMS])
    return [t for t in kept if t in chosen]


def idf_sum(terms: Sequence[str], shares: Mapping[str, float], chunks: int) -> float:
    """What the terms weigh together in FTS5's BM25: the sum of their idf (a term in
    half the chunks or more weighs nothing)."""
    total = 0.0
    for t in terms:
        having = shares.get(t, 0.0) * chunks
        total += max(math.log((chunks - having + 0.5) / (having + 0.5)), 0.0)
    return total


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
