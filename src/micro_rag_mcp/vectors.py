"""The vector side of the index: FAISS ``IndexIDMap2`` over ``IndexFlatIP``.

Ids are catalog chunk ids and vectors are L2-normalized, so inner product is cosine.
This is derived data: whatever is missing is recomputed from the catalog's text, and
whatever the catalog no longer knows is dropped (see ``indexer.reconcile``). The file is
written atomically, so a reader process sees the previous save or the next one. A process
that only searches maps the file read-only instead of copying it: its pages are the page
cache's, shared by every process that serves the folder (a save is a new file, so a
mapping never sees a half-written one).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from micro_rag_mcp.fsutil import atomic_write_bytes

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)


class VectorStore:
    """An in-memory FAISS index guarded by a lock, saved atomically to one file."""

    def __init__(
        self, path: Path, dimension: int, index: Any = None, owner: str | None = None
    ) -> None:
        import faiss

        self.path = path
        self.dimension = dimension
        self._index = (
            index if index is not None else faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        )
        self._lock = threading.Lock()
        self.dirty = False
        self.stamp: tuple[int, int, int] | None = None  # of the file last read or written
        self.owner = owner  # id of the catalog whose chunk ids these vectors carry
        self.mapped = False  # read-only: the vectors are the saved file's pages

    @classmethod
    def load(
        cls, path: Path, dimension: int, owner: str | None = None, *, mapped: bool = False
    ) -> VectorStore:
        """Load the saved index; an unreadable or mismatched file yields an empty store.

        ``mapped``: map the file read-only rather than copy it, for a store that is only
        searched (``add`` and ``remove`` then raise).
        """
        import faiss
        import numpy as np

        stamp = file_stamp(path)
        if stamp is None:
            return cls(path, dimension, owner=owner)
        try:
            if mapped:
                index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)
            else:
                index = faiss.deserialize_index(np.frombuffer(path.read_bytes(), dtype=np.uint8))
        except Exception as e:  # faiss raises RuntimeError; a torn file may raise others
            logger.warning(
                "%s is unreadable (%s); vectors will be rebuilt from the catalog", path, e
            )
            return cls(path, dimension, owner=owner)
        if index.d != dimension or not isinstance(index, faiss.IndexIDMap2):
            logger.warning(
                "%s holds %s vectors of dimension %d, expected IndexIDMap2 of %d; rebuilding",
                path,
                type(index).__name__,
                index.d,
                dimension,
            )
            return cls(path, dimension, owner=owner)
        store = cls(path, dimension, index, owner)
        store.stamp = stamp
        store.mapped = mapped
        return store

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def ids(self) -> npt.NDArray[np.int64]:
        import faiss
        import numpy as np

        with self._lock:
            return np.array(faiss.vector_to_array(self._index.id_map), dtype=np.int64)

    def add(self, ids: Sequence[int], vectors: npt.NDArray[np.float32]) -> None:
        import numpy as np

        if len(ids) == 0:
            return
        self._check_writable()
        with self._lock:
            self._index.add_with_ids(
                np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64)
            )
            self.dirty = True

    def remove(self, ids: Sequence[int]) -> int:
        import numpy as np

        if len(ids) == 0:
            return 0
        self._check_writable()
        with self._lock:
            # faiss's Python wrapper turns an id array into an IDSelectorBatch itself.
            removed = int(self._index.remove_ids(np.asarray(ids, dtype=np.int64)))  # type: ignore[arg-type]
            if removed:
                self.dirty = True
            return removed

    def _check_writable(self) -> None:
        # faiss aborts the process on a write to a mapped index; refuse it here instead.
        if self.mapped:
            raise RuntimeError(f"{self.path} is mapped read-only; load it unmapped to change it")

    def search(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        """The k nearest chunk ids with their cosine similarity, best first."""
        import numpy as np

        with self._lock:
            if self._index.ntotal == 0:
                return []
            k = min(k, int(self._index.ntotal))
            scores, ids = self._index.search(np.asarray(query, dtype=np.float32).reshape(1, -1), k)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]

    def similarity(self, query: npt.NDArray[np.float32], ids: Sequence[int]) -> dict[int, float]:
        """Cosine similarity of the query to each given chunk that has a vector."""
        import numpy as np

        out: dict[int, float] = {}
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._lock:
            for cid in ids:
                try:
                    vec = self._index.reconstruct(int(cid))
                except RuntimeError:  # no vector for this id (yet)
                    continue
                out[int(cid)] = float(np.dot(vec, q))
        return out

    def save(self) -> None:
        """Write the index atomically: temporary file, fsync, rename, fsync the folder."""
        import faiss

        with self._lock:
            data = faiss.serialize_index(self._index).tobytes()
            self.dirty = False
        try:
            atomic_write_bytes(self.path, data)
        except BaseException:
            self.dirty = True  # the next save must still write what this one could not
            raise
        self.stamp = file_stamp(self.path)


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when the file is replaced: (inode, size, mtime_ns), or None if absent."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)
