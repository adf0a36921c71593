"""Hybrid retrieval on the embedded store: FAISS and FTS5 candidates, fused on their scores.

The candidates are gathered and ranked as on every store (``search.gather``, from this
store's ``CatalogChannels``; ``search.fusion`` tells how and why). Scores, not ranks,
are fused: a rare exact term that the keyword channel finds far ahead of everything else
keeps that lead, where reciprocal rank fusion would flatten it to "rank 1" and let merely
similar chunks overtake it. A channel that finds nothing adds nothing to anyone.

``score`` is always the cosine similarity of the chunk to the query, whichever channel
found it, so ``score_threshold`` means one thing. The threshold cuts only passages the
keyword channel did not find: a passage that contains the query's words is kept on that
evidence (an identifier, a name, a word in a script the vector model does not know can
have a low cosine and still be exactly what was asked for). While vectors are being made,
the best keyword candidates that have none are embedded with the query
(``gather.EMBED_NOW``); any other chunk with no vector yet carries no score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from micro_rag_mcp.core.results import Found
from micro_rag_mcp.local.answers.channels import CatalogChannels, VectorSide
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.search import gather
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.plan import QueryPlan, plan_query
from micro_rag_mcp.search.scope import Resolved

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DEFAULT_PARAMS = SearchParams()


def hybrid_search(
    catalog: Catalog,
    vectors: VectorStore | None,
    query: str,
    query_vector: npt.NDArray[np.float32] | None,
    *,
    top_k: int,
    score_threshold: float,
    params: SearchParams = DEFAULT_PARAMS,
    within: Resolved | None = None,
    embed: Callable[[Sequence[str]], npt.NDArray[np.float32]] | None = None,
) -> Found:
    """The best ``top_k`` chunks for the query, from every channel that is available
    (from the files of ``within`` only, if given; ``embed``: the model's, to embed the
    best keyword candidates that have no vector yet).

    Candidates are fused first; rows (text and citation) are then fetched best first, a
    window at a time, until ``top_k`` pass the threshold, all in one read snapshot.
    """
    side = None
    if query_vector is not None and vectors is not None and "vector" in params.channels:
        keys = within.keys if within is not None else None
        hits = vectors.search(query_vector, params.depth, keys)
        chunks = within.chunk_ids if within is not None else None
        side = VectorSide(vectors, query_vector, hits, chunks, embed)
    return search_beside(
        catalog,
        query,
        lambda: side,
        top_k=top_k,
        score_threshold=score_threshold,
        params=params,
        files=within.file_ids if within is not None else None,
    )


def search_beside(
    catalog: Catalog,
    query: str,
    vector_side: Callable[[], VectorSide | None],
    *,
    top_k: int,
    score_threshold: float,
    params: SearchParams = DEFAULT_PARAMS,
    files: Sequence[int] | None = None,
    all_code: bool = False,
) -> Found:
    """``hybrid_search`` whose vector channel runs elsewhere: ``vector_side`` waits for it
    (None: it did not run). It is asked once the keyword channel is done, so a caller that
    starts the query's embedding and vector search in another thread first has both
    channels run at once (SQLite, onnxruntime and FAISS let go of the GIL). With
    ``files``, the keyword channel takes chunks of those file ids only; the vector side
    is expected to keep to the same scope. ``all_code``: whether every file the folder's
    suffixes take in is code (see ``CatalogChannels``).
    """
    plan = plan_query(query, params)
    with catalog.snapshot():
        channels = CatalogChannels(catalog, vector_side, files, all_code)
        return gather.search(plan, channels, params, top_k, score_threshold)


def keyword_candidates(
    catalog: Catalog, query: str, params: SearchParams, files: Sequence[int] | None = None
) -> tuple[list[tuple[int, float]], bool]:
    """The keyword channel's best ``depth`` chunks with their BM25 scores (of ``files``
    only, if given), and whether it ran at all (the query has a word, or a CJK run, and
    the channel is on)."""
    plan = plan_query(query, params)
    hits, _ = keyword_evidence(catalog, plan, params, files)
    return hits, plan.keyword


def keyword_evidence(
    catalog: Catalog, plan: QueryPlan, params: SearchParams, files: Sequence[int] | None = None
) -> tuple[list[tuple[int, float]], float]:
    """The keyword channel's best ``depth`` chunks for the plan, and the summed idf of
    the words and pairs searched."""
    return gather.keyword_evidence(plan, CatalogChannels(catalog, files=files), params)
