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

from collections.abc import Sequence

from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.search.terms import COMMON_SHARE, held_weight, searched_terms

SAMPLE_PER_RESULT = 10  # an all-common query scores this many rows per result asked


def or_query(terms: Sequence[str]) -> str:
    """An FTS5 expression matching any of the terms, each quoted (so never FTS5 syntax)."""
    return " OR ".join(f'"{t}"' for t in terms)


def keyword_hits(
    catalog: Catalog,
    terms: Sequence[str],
    limit: int,
    weights: tuple[float, float],
    files: Sequence[int] | None = None,
    *,
    alone: bool = True,
) -> tuple[list[tuple[int, float]], float]:
    """The best ``limit`` chunks for the terms by BM25, best first, with their scores
    (only chunks of ``files``, if given); and what the terms searched weigh (each once,
    ``held_weight``). ``alone``: no CJK pairs are searched beside them
    (``terms.searched_terms``)."""
    distinct = list(dict.fromkeys(terms))
    shares, _ = catalog.terms.shares_among(distinct)
    searched = searched_terms(distinct, shares, alone=alone)
    if not searched:
        return [], 0.0
    weight = held_weight(searched, shares, catalog.terms.id_span())
    if any(shares[t] <= COMMON_SHARE for t in searched):
        return catalog.keywords.keyword_search(
            or_query(searched), limit, weights, files=files
        ), weight
    hits = catalog.keywords.keyword_search(
        or_query(searched), limit, weights, scored=limit * SAMPLE_PER_RESULT, files=files
    )
    return hits, weight
