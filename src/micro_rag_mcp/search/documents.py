"""Whole documents for long CJK queries: which pairs a store matches them for, and how
its files' scores rank the passages.

A case description of 450 characters matches a few pairs in each passage of a case; what
tells the relevant case is that the whole case holds the whole description. So a CJK query
of ``DOCUMENT_GRAMS`` pairs or more is also matched against each file's pairs taken
together (BM25 over the file, each pair as often as the query holds it), and the files
that match best come first, each shown by its best passage. LeCaRD dev, nDCG@10:
passages 0.43, whole files 0.62; a fifth of the passage's score added to its file's
lowered that (docs/benchmarks.md). Both stores keep the files' pairs and rank with this.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from micro_rag_mcp.search.terms import COMMON_SHARE

# A CJK query of this many pairs or more (repeats counted: a paragraph) is matched
# against whole files.
DOCUMENT_GRAMS = 32
# The whole-file match searches at most about this many pairs (repeats counted), the
# rarest: a LeCaRD description holds 280 or so, and a query of 2,000 characters would
# otherwise take ~900, 4.7 s on 9,088 cases (the common pairs have the longest lists).
MAX_DOCUMENT_TERMS = 512

K = TypeVar("K", bound=Hashable)


def is_long(counts: Mapping[str, int]) -> bool:
    """Whether a query of these pair counts (``cjk.query_gram_counts``) is matched
    against whole files."""
    return sum(counts.values()) >= DOCUMENT_GRAMS


def document_terms(counts: Mapping[str, int], shares: Mapping[str, float]) -> list[str]:
    """The pairs a whole-file match searches, each as often as the query holds it: those
    in at most ``COMMON_SHARE`` of the passages, the rarest first, about
    ``MAX_DOCUMENT_TERMS`` in all."""
    kept: list[str] = []
    for gram in sorted(counts, key=lambda g: shares.get(g, 0.0)):  # the rarest first
        if shares.get(gram, 0.0) > COMMON_SHARE or len(kept) >= MAX_DOCUMENT_TERMS:
            break
        kept += [gram] * counts[gram]
    return kept


def by_documents(
    passages: Sequence[tuple[int, float]],
    documents: Sequence[tuple[K, float]],
    head_of: Mapping[int, int],
    first_of: Mapping[K, int],
) -> list[tuple[int, float]]:
    """The keyword hits of a long CJK query, ranked by their files' whole-file scores.

    ``passages`` are the passage hits (chunk id, BM25) and ``documents`` the best files
    (a store's key for a file, BM25 over its whole text), both best first; ``head_of``
    gives a passage's file's first chunk, ``first_of`` a file's. Each file of
    ``documents`` is shown by its best passage hit, or else its first chunk, with its
    file's score on the scale of the best passage's; a passage hit of any other file
    follows them, in its own order."""
    if not documents or documents[0][1] <= 0:
        return list(passages)
    best_passage: dict[int, tuple[int, float]] = {}  # a file's head -> its best passage hit
    for cid, score in passages:  # best first
        best_passage.setdefault(head_of.get(cid, cid), (cid, score))
    d_best = documents[0][1]
    scale = passages[0][1] if passages else d_best
    scores: dict[int, float] = {}
    for key, d_score in documents:
        head = first_of.get(key)
        if head is not None:
            cid, _ = best_passage.pop(head, (head, 0.0))
            scores[cid] = scale * d_score / d_best
    below = scale * documents[-1][1] / d_best / 2
    for cid, p_score in best_passage.values():  # files outside the best documents
        scores[cid] = below * p_score / scale
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def summed(
    first: Sequence[tuple[int, float]], second: Sequence[tuple[int, float]]
) -> list[tuple[int, float]]:
    """Two keyword result lists (the words' and the CJK pairs') as one: a chunk in both
    gets the sum, best first."""
    scores = dict(first)
    for cid, score in second:
        scores[cid] = scores.get(cid, 0.0) + score
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
