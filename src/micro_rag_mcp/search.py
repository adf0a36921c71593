"""Hybrid retrieval: FAISS and FTS5 candidates fused by reciprocal rank.

``score`` is always the cosine similarity of the chunk to the query, whichever channel
found it, so ``score_threshold`` means one thing. A chunk with no vector yet (indexing in
progress) carries no score and is not cut by the threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from micro_rag_mcp.catalog import Catalog
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

    Tuned on the SciFact TRAIN split (809 queries) with 1000/200 chunks; see
    docs/benchmarks.md for every lever tried and its effect.
    """

    depth: int = 200  # candidates taken from each channel (100 and 200 rank the same)
    rrf_k: float = 20.0  # 60 -> 20: +0.6 nDCG@10 on train; plateau from 10 to 20
    vector_weight: float = 1.0
    keyword_weight: float = 1.25  # with rrf_k 20: +0.5 nDCG@10 on train
    title_weight: float = 1.0  # BM25 weight of the file-name column against the text column
    channels: tuple[str, ...] = ("vector", "keyword")
    # Leave English stop words out of the keyword query: same hybrid quality, keyword-only
    # +0.2 nDCG@10, and half the FTS5 time (an OR with "the" matches nearly every chunk).
    drop_stopwords: bool = True


def fts_query(
    text: str, max_terms: int = MAX_QUERY_TERMS, stopwords: frozenset[str] = frozenset()
) -> str | None:
    """An FTS5 expression that matches any word of ``text``, safe for any input.

    Every term is a quoted string, so FTS5 syntax in the query (``NEAR(``, ``AND``, ``*``,
    ``-``, ``"``) is only ever text. Words in ``stopwords`` are left out unless the text
    has no other word. Returns None when the text has no word at all.
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
    terms = seen or stopped
    if not terms:
        return None
    return " OR ".join(f'"{t}"' for t in terms)


def rrf(rankings: Sequence[tuple[Sequence[int], float]], k: float) -> dict[int, float]:
    """Reciprocal rank fusion: sum over channels of weight / (k + rank), ranks from 1."""
    fused: dict[int, float] = {}
    for ids, weight in rankings:
        for rank, cid in enumerate(ids, 1):
            fused[cid] = fused.get(cid, 0.0) + weight / (k + rank)
    return fused


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
    vector_hits: list[tuple[int, float]] = []
    if query_vector is not None and vectors is not None and "vector" in params.channels:
        vector_hits = vectors.search(query_vector, params.depth)
    cosine = dict(vector_hits)
    hits: list[Hit] = []
    with catalog.snapshot():
        keyword_ids: list[int] = []
        stopwords = STOPWORDS if params.drop_stopwords else frozenset()
        match = fts_query(query, stopwords=stopwords) if "keyword" in params.channels else None
        if match is not None:
            keyword_ids = catalog.keyword_search(match, params.depth, (params.title_weight, 1.0))
        found_by = {cid: ("vector",) for cid in cosine}
        for cid in keyword_ids:
            found_by[cid] = (*found_by.get(cid, ()), "keyword")
        fused = rrf(
            [
                ([cid for cid, _ in vector_hits], params.vector_weight),
                (keyword_ids, params.keyword_weight),
            ],
            params.rrf_k,
        )
        ranked = sorted(fused, key=lambda cid: (-fused[cid], cid))
        window = max(2 * top_k, 20)
        for at in range(0, len(ranked), window):
            batch = ranked[at : at + window]
            rows = catalog.fetch(batch)
            unscored = [cid for cid in batch if cid not in cosine and cid in rows]
            if query_vector is not None and vectors is not None and unscored:
                cosine.update(vectors.similarity(query_vector, unscored))
            for cid in batch:
                row = rows.get(cid)
                if row is None:  # a vector whose chunk was deleted after the file was saved
                    continue
                score = cosine.get(cid)
                if score is not None and score < score_threshold:
                    continue
                hits.append(Hit(row, score, fused[cid], found_by[cid]))
                if len(hits) == top_k:
                    return hits
    return hits
