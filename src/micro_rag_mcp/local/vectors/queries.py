"""The vector queries: the nearest vectors to a query, in a subset or all, exactly or
through the graph, and the cosine of given vectors.

Functions of a FAISS index (and its graph), holding no state: ``VectorStore`` calls them
under its lock, on the index and graph it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from micro_rag_mcp.local.vectors.graph import Approximate

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# A scope of up to this many chunks is scored on its own vectors (one batch lookup and
# product); a larger one is a filtered scan of the flat index, which at 100k vectors is
# the cheaper of the two from a few thousand on (docs/benchmarks.md).
SUBSET_EXACT = 5_000


def nearest(
    index: Any,
    graph: Approximate | None,
    query: npt.NDArray[np.float32],
    k: int,
    within: npt.NDArray[np.int64] | None = None,
) -> list[tuple[int, float]]:
    """The k nearest ids of ``index`` with their cosine similarity, best first.

    Exact without ``graph``; with it, the graph's candidates scored with their exact
    vectors. With ``within`` (sorted ids: a search's scope), only those ids, always
    exactly: a scope of up to ``SUBSET_EXACT`` ids is scored on its own vectors, a larger
    one by a scan of the flat index that skips the rest (a graph walk restricted to a
    small share of its nodes misses neighbours).
    """
    import faiss
    import numpy as np

    # One query gains nothing from OpenMP's threads, and on a busy machine waiting for
    # the second one cost 1-15 ms a search. The setting is this thread's only.
    faiss.omp_set_num_threads(1)
    if index.ntotal == 0:
        return []
    if within is not None:
        return _nearest_within(index, query, k, within)
    if graph is not None:
        scores = similarity(index, query, graph.search(query, k))
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    k = min(k, int(index.ntotal))
    scores_, ids = index.search(np.asarray(query, dtype=np.float32).reshape(1, -1), k)
    return [(int(i), float(s)) for i, s in zip(ids[0], scores_[0], strict=True) if i >= 0]


def _nearest_within(
    index: Any, query: npt.NDArray[np.float32], k: int, within: npt.NDArray[np.int64]
) -> list[tuple[int, float]]:
    import faiss
    import numpy as np

    if within.size == 0:
        return []
    if within.size <= SUBSET_EXACT:
        scores = similarity(index, query, within)
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
    params = faiss.SearchParameters()
    params.sel = faiss.IDSelectorBatch(within)
    k = min(k, int(within.size))
    q = np.asarray(query, dtype=np.float32).reshape(1, -1)
    scores_, ids = index.search(q, k, params=params)
    return [(int(i), float(s)) for i, s in zip(ids[0], scores_[0], strict=True) if i >= 0]


def similarity(
    index: Any, query: npt.NDArray[np.float32], ids: Sequence[int] | npt.NDArray[np.int64]
) -> dict[int, float]:
    """Cosine similarity of the query to each given id of ``index`` that has a vector."""
    import numpy as np

    q = np.asarray(query, dtype=np.float32).reshape(-1)
    wanted = np.asarray(ids, dtype=np.int64)
    if wanted.size == 0:
        return {}
    try:  # one call for all, unless some id has no vector (yet, or any more)
        found = wanted
        scores = index.reconstruct_batch(wanted) @ q
    except RuntimeError:
        found = np.asarray([c for c in wanted if _has(index, int(c))], dtype=np.int64)
        scores = index.reconstruct_batch(found) @ q if found.size else found
    return dict(zip(found.tolist(), scores.tolist(), strict=True))


def _has(index: Any, cid: int) -> bool:
    try:
        index.reconstruct(cid)
    except RuntimeError:
        return False
    return True
