"""Hybrid search over a Milvus store: Milvus proposes (``channels.StoreChannels``), and the
candidates are gathered, ranked and cut by the threshold as on the embedded store
(``search.gather``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from micro_rag_mcp.core.results import Found
from micro_rag_mcp.milvus.channels import StoreChannels
from micro_rag_mcp.milvus.index import MilvusIndex
from micro_rag_mcp.milvus.keywords import KeywordStats
from micro_rag_mcp.milvus.whole_files import FileStats
from micro_rag_mcp.search import gather
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.plan import plan_query

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def store_search(
    index: MilvusIndex,
    stats: KeywordStats,
    files_stats: FileStats,
    query: str,
    query_vector: npt.NDArray[np.float32] | None,
    *,
    top_k: int,
    score_threshold: float,
    params: SearchParams,
) -> Found:
    """The best ``top_k`` chunks for the query, as ``search.hybrid_search`` ranks them."""
    channels = StoreChannels(index, stats, files_stats, query_vector)
    return gather.search(plan_query(query, params), channels, params, top_k, score_threshold)
