"""The approximate vector index of a large folder: an HNSW graph over 8-bit codes.

Derived from the flat store (``vectors.py``) the way the flat store is derived from the
catalog: its file is a cache of the graph, and the flat store says which vectors are
live. Ids the graph holds but the flat store no longer has are deleted: searches skip
them through a selector, so a deleted chunk is never returned. Candidates are re-scored
with the flat store's exact vectors, so only the choice of candidates is approximate.

Chosen by measurement (``bench.ann_choice``, docs/benchmarks.md): on real embeddings,
HNSW with 8-bit codes and ``efSearch`` 400 found the exact top 10 every time and 99 % of
the exact top 200, in about half a millisecond, for a third of the bytes of HNSW over
floats; IVF with 8-bit codes needed a wide probe for the deeper candidates (85 % of the
top 200 at nprobe 32), and usearch brought no speed or recall over it for a new
dependency.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from micro_rag_mcp.core.fsutil import atomic_write_bytes

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

APPROXIMATE_FROM = 20_000  # vectors from which search uses the graph (docs/benchmarks.md)
LINKS = 16  # HNSW M: neighbours per node
# With faiss's default of 40, part of the exact top 10 of tightly clustered vectors was out
# of reach at any efSearch (recall 0.96 at 100k); 100 reached all of it, for a build
# about three times as long (docs/benchmarks.md).
EF_CONSTRUCTION = 100
TRAIN_SAMPLE = 100_000  # vectors the 8-bit ranges are learned from
REBUILD_DELETED = 0.25  # rebuild once this share of the graph is deleted
ADOPT_MISSING = 0.05  # a loaded graph that lacks more than this share is rebuilt instead
# Vectors added to a graph between two looks at a stop: a build of a million takes many
# minutes on two cores, a slice of this many about a second.
BUILD_SLICE = 2_048


class Approximate:
    """An ``IndexIDMap`` over ``IndexHNSWSQ`` (inner product), plus the ids deleted from it."""

    def __init__(self, index: Any, deleted: npt.NDArray[np.int64] | None = None) -> None:
        import numpy as np

        self._index = index
        self._deleted = deleted if deleted is not None else np.empty(0, dtype=np.int64)
        self._selector: Any = None  # built lazily from _deleted, kept alive for faiss

    @classmethod
    def build(
        cls,
        ids: npt.NDArray[np.int64],
        vectors: npt.NDArray[np.float32],
        stop: threading.Event | None = None,
    ) -> Approximate | None:
        """The graph of these vectors, or None if ``stop`` was set before it was done."""
        import faiss
        import numpy as np

        dimension = vectors.shape[1]
        # faiss's stubs type the quantizer kind as the class; SWIG takes its int constant.
        graph = faiss.IndexHNSWSQ(
            dimension,
            faiss.ScalarQuantizer.QT_8bit,  # type: ignore[arg-type]
            LINKS,
            faiss.METRIC_INNER_PRODUCT,
        )
        graph.hnsw.efConstruction = EF_CONSTRUCTION
        index = faiss.IndexIDMap(graph)
        step = max(1, len(ids) // TRAIN_SAMPLE)
        index.train(np.ascontiguousarray(vectors[::step], dtype=np.float32))
        built = cls(index)
        return built if built.add(ids, vectors, stop) else None

    @classmethod
    def load(cls, path: Path, dimension: int) -> Approximate | None:
        """The saved graph, or None if it is absent, unreadable or of another kind."""
        import faiss
        import numpy as np

        try:
            data = np.frombuffer(path.read_bytes(), dtype=np.uint8)
        except FileNotFoundError:
            return None
        try:
            index = faiss.deserialize_index(data)
        except Exception as e:  # faiss raises RuntimeError; a torn file may raise others
            logger.warning("%s is unreadable (%s); it will be rebuilt", path, e)
            return None
        inner = faiss.downcast_index(index.index) if isinstance(index, faiss.IndexIDMap) else None
        if index.d != dimension or not isinstance(inner, faiss.IndexHNSWSQ):
            logger.warning("%s is not an HNSW index of dimension %d; rebuilding", path, dimension)
            return None
        return cls(index)

    def __len__(self) -> int:
        """How many live vectors the graph holds."""
        return int(self._index.ntotal) - len(self._deleted)

    def ids(self) -> npt.NDArray[np.int64]:
        """Every id in the graph, deleted ones included."""
        import faiss
        import numpy as np

        return np.array(faiss.vector_to_array(self._index.id_map), dtype=np.int64)

    @property
    def worn(self) -> bool:
        """Whether so much of the graph is deleted that it should be built again."""
        return len(self._deleted) > REBUILD_DELETED * max(1, int(self._index.ntotal))

    def add(
        self,
        ids: Sequence[int] | npt.NDArray[np.int64],
        vectors: npt.NDArray[np.float32],
        stop: threading.Event | None = None,
    ) -> bool:
        """Add vectors, a slice at a time; False if ``stop`` was set before all were in."""
        import numpy as np

        ids = np.asarray(ids, dtype=np.int64)
        for start in range(0, len(ids), BUILD_SLICE):
            if stop is not None and stop.is_set():
                return False
            end = start + BUILD_SLICE
            self._index.add_with_ids(
                np.ascontiguousarray(vectors[start:end], dtype=np.float32), ids[start:end]
            )
        return True

    def delete(self, ids: npt.NDArray[np.int64]) -> None:
        """Mark ids as deleted (ids the graph does not hold are ignored)."""
        import numpy as np

        held = np.intersect1d(np.asarray(ids, dtype=np.int64), self.ids())
        if held.size:
            self._deleted = np.union1d(self._deleted, held)
            self._selector = None

    def search(self, query: npt.NDArray[np.float32], k: int) -> list[int]:
        """About the k nearest live ids, best first by the 8-bit codes."""
        import faiss
        import numpy as np

        k = min(k, len(self))
        if k <= 0:
            return []
        params = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # not in the stubs
        params.efSearch = max(2 * k, 128)
        if len(self._deleted):
            if self._selector is None:
                self._selector = faiss.IDSelectorNot(faiss.IDSelectorBatch(self._deleted))
            params.sel = self._selector
        _, ids = self._index.search(
            np.asarray(query, dtype=np.float32).reshape(1, -1), k, params=params
        )
        return [int(i) for i in ids[0] if i >= 0]

    def save(self, path: Path) -> None:
        """Write the graph atomically (deleted ids are derived again on load)."""
        import faiss

        atomic_write_bytes(path, faiss.serialize_index(self._index).tobytes())


def drop(path: Path) -> None:
    """Remove a saved graph (the folder fell below the size that uses one)."""
    path.unlink(missing_ok=True)
