"""The keyword channel: BM25 over FTS5, without scoring every chunk for words most contain.

FTS5 scores every row that matches any term of an OR query before it sorts, so a word
found in most chunks made a search cost a scan of the whole table (107 ms at 100k
chunks). Such a word carries no BM25 weight anyway: FTS5 floors the idf of a term found
in more than half the rows to 1e-6, so it cannot change the order of the rows that match
any other term. It is left out of the query. A query of nothing but such words is
answered from the first rows that match, scored by BM25: still a keyword answer, at a
bounded cost. A query of many words (a paragraph, a pasted log) searches its rarest
``MAX_SEARCHED_TERMS``, never its first ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from micro_rag_mcp.local.catalog import Catalog

# Lucene's English stop words (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET).
_LUCENE_STOP = (
    "a an and are as at be but by for if in into is it no not of on or such that the "
    "their then there these they this to was will with"
)
STOPWORDS: frozenset[str] = frozenset(_LUCENE_STOP.split())

COMMON_SHARE = 0.5  # a term in more than this share of chunks has a floored idf in FTS5
SAMPLE_PER_RESULT = 10  # an all-common query scores this many rows per result asked
# A query of more distinct words than this (a pasted log, a whole page) is searched for
# its rarest ones: they carry the BM25 weight, and every word searched costs its postings.
MAX_SEARCHED_TERMS = 128


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


def or_query(terms: Sequence[str]) -> str:
    """An FTS5 expression matching any of the terms, each quoted (so never FTS5 syntax)."""
    return " OR ".join(f'"{t}"' for t in terms)


def keyword_hits(
    catalog: Catalog,
    terms: Sequence[str],
    limit: int,
    weights: tuple[float, float],
    files: Sequence[int] | None = None,
) -> tuple[list[tuple[int, float]], float]:
    """The best ``limit`` chunks for the terms by BM25, best first, with their scores
    (only chunks of ``files``, if given); and the summed idf of the terms searched
    (``idf_sum``)."""
    shares = catalog.term_shares(terms)
    searched = searched_terms(terms, shares)
    weight = idf_sum(searched, shares, catalog.id_span())
    if any(shares[t] <= COMMON_SHARE for t in searched):
        return catalog.keyword_search(or_query(searched), limit, weights, files=files), weight
    hits = catalog.keyword_search(
        or_query(searched), limit, weights, scored=limit * SAMPLE_PER_RESULT, files=files
    )
    return hits, weight


def idf_sum(terms: Sequence[str], shares: Mapping[str, float], chunks: int) -> float:
    """What the terms weigh together in FTS5's BM25: the sum of their idf (a term in
    half the chunks or more weighs nothing)."""
    total = 0.0
    for t in terms:
        having = shares.get(t, 0.0) * chunks
        total += max(math.log((chunks - having + 0.5) / (having + 0.5)), 0.0)
    return total
