"""The vector side of the index: FAISS ``IndexIDMap2`` over ``IndexFlatIP``.

Ids are vector keys (``vector_text.vector_key``: a hash of the text a chunk is embedded
as, recorded with every chunk in the catalog) and vectors are L2-normalized, so inner
product is cosine. This is derived data: whatever is missing is recomputed from the
catalog's text, and whatever no chunk of the catalog carries is dropped (see
``indexer.reconcile``). The file is
written atomically, so a reader process sees the previous save or the next one. A process
that only searches maps the file read-only instead of copying it: its pages are the page
cache's, shared by every process that serves the folder (a save is a new file, so a
mapping never sees a half-written one).

From ``approximate_from`` vectors on, search asks an HNSW graph (``ann.py``) for its
candidates instead of scanning every vector; the flat index stays the source of the
vectors and of which ids are live, and scores every candidate exactly.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from micro_rag_mcp.core.fsutil import atomic_write_bytes
from micro_rag_mcp.local.vectors.graph import ADOPT_MISSING, APPROXIMATE_FROM, Approximate
from micro_rag_mcp.local.vectors.graph import drop as drop_graph
from micro_rag_mcp.local.vectors.queries import nearest, similarity

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)


# How the vectors' file is replaced (atomically); a test gives one that fails as a full disk.
WriteFile = Callable[[Path, bytes], None]


class VectorStore:
    """An in-memory FAISS index guarded by a lock, saved atomically to one file."""

    def __init__(
        self,
        path: Path,
        dimension: int,
        index: Any = None,
        owner: str | None = None,
        *,
        graph_path: Path | None = None,
        approximate_from: int = APPROXIMATE_FROM,
        write_file: WriteFile = atomic_write_bytes,
    ) -> None:
        import faiss

        self.path = path
        self.dimension = dimension
        self._index: Any = (
            index if index is not None else faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        )
        self._lock = threading.Lock()
        self._vectors_dirty = False  # the flat index differs from its file
        self._graph_dirty = False  # the graph differs from its file
        self.stamp: tuple[int, int, int] | None = None  # of the file last read or written
        self.graph_stamp: tuple[int, int, int] | None = None  # likewise, of the graph's file
        self.owner = owner  # id of the catalog whose chunk ids these vectors carry
        self.mapped = False  # read-only: the vectors are the saved file's pages
        self.graph_path = graph_path  # where the HNSW graph is saved; None: never one
        self.approximate_from = approximate_from
        self.write_file = write_file
        self._graph: Approximate | None = None

    @classmethod
    def load(
        cls,
        path: Path,
        dimension: int,
        owner: str | None = None,
        *,
        mapped: bool = False,
        graph_path: Path | None = None,
        approximate_from: int = APPROXIMATE_FROM,
        write_file: WriteFile = atomic_write_bytes,
    ) -> VectorStore:
        """Load the saved index (and its graph, if it is large enough to use one).

        An unreadable or mismatched vector file yields an empty store; an unreadable
        graph, or one far behind the vectors, is left out (search is exact until the
        writer builds it again). ``mapped``: map the vector file read-only rather than
        copy it, for a store that is only searched (``add`` and ``remove`` then raise).
        """
        graph_stamp = file_stamp(graph_path) if graph_path is not None else None
        store = cls._load_flat(path, dimension, owner, mapped)
        store.graph_path = graph_path
        store.graph_stamp = graph_stamp
        store.approximate_from = approximate_from
        store.write_file = write_file
        if graph_path is not None and len(store) >= approximate_from:
            store._adopt(Approximate.load(graph_path, dimension))
        return store

    @classmethod
    def _load_flat(cls, path: Path, dimension: int, owner: str | None, mapped: bool) -> VectorStore:
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
            if self._graph is not None:
                self._graph.add(ids, vectors)
            self._vectors_dirty = True

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        within: npt.NDArray[np.int64] | None = None,
    ) -> list[tuple[int, float]]:
        """The k nearest ids with their cosine similarity, best first
        (``vector_search.nearest``): through the graph from ``approximate_from`` vectors."""
        with self._lock:
            return nearest(self._index, self._graph if self.approximate else None, query, k, within)

    def similarity(self, query: npt.NDArray[np.float32], ids: Sequence[int]) -> dict[int, float]:
        """Cosine similarity of the query to each given id that has a vector."""
        with self._lock:
            return similarity(self._index, query, ids)

    @property
    def approximate(self) -> bool:
        """Whether search takes its candidates from the graph."""
        return self._graph is not None and self._index.ntotal >= self.approximate_from

    def holds(self, ids: Sequence[int]) -> npt.NDArray[np.bool_]:
        """Which of the given ids have a vector."""
        import numpy as np

        return np.isin(np.asarray(ids, dtype=np.int64), self.ids())

    def remove(self, ids: Sequence[int]) -> int:
        import numpy as np

        if len(ids) == 0:
            return 0
        self._check_writable()
        with self._lock:
            # faiss's Python wrapper turns an id array into an IDSelectorBatch itself.
            removed = int(self._index.remove_ids(np.asarray(ids, dtype=np.int64)))
            if removed:
                self._vectors_dirty = True
                if self._graph is not None:
                    self._graph.delete(np.asarray(ids, dtype=np.int64))
            return removed

    def _check_writable(self) -> None:
        # faiss aborts the process on a write to a mapped index; refuse it here instead.
        if self.mapped:
            raise RuntimeError(f"{self.path} is mapped read-only; load it unmapped to change it")

    # -- the graph -------------------------------------------------------------------

    @property
    def graph_due(self) -> bool:
        """Whether ``refresh_graph`` has work: a graph to build, rebuild or drop."""
        if self.graph_path is None:
            return False
        large = len(self) >= self.approximate_from
        if self._graph is None:
            return large or self.graph_path.exists()
        return not large or self._graph.worn

    def refresh_graph(self, stop: threading.Event | None = None) -> None:
        """Build the graph once the store is large enough, rebuild a worn one, drop it when
        the store shrinks below the size that uses it. Writer only; the next save writes it.
        A build stops a slice after ``stop`` is set, leaving the graph as it was.

        The build reads the flat vectors in place, outside the lock (searches meanwhile
        use the old graph or none): only the writer, which is here, changes the store.
        """
        if not self.graph_due:
            return
        assert self.graph_path is not None
        if len(self) < self.approximate_from:
            with self._lock:
                self._graph = None
            drop_graph(self.graph_path)
            return
        started = time.monotonic()
        ids, vectors = self._arrays()
        graph = Approximate.build(ids, vectors, stop)
        if graph is None:
            logger.info("stopped building the search graph; the next pass builds it")
            return
        with self._lock:
            self._graph = graph
            self._graph_dirty = True
        logger.info(
            "built the search graph of %d vectors in %.1f s", len(ids), time.monotonic() - started
        )

    def _arrays(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Every id and vector of the flat index, the vectors as a view (no copy)."""
        import faiss

        flat: Any = faiss.downcast_index(self._index.index)
        count = int(flat.ntotal)
        vectors = faiss.rev_swig_ptr(flat.get_xb(), count * self.dimension)
        return self.ids(), vectors.reshape(count, self.dimension)

    def _adopt(self, graph: Approximate | None) -> None:
        """Take a loaded graph, brought in line with the vectors: ids the vectors no longer
        hold are deleted, vectors the graph lacks are added, unless so many lack that
        building it again is the better way (the writer does that)."""
        import numpy as np

        if graph is None:
            return
        ids = self.ids()
        held = graph.ids()
        missing = np.setdiff1d(ids, held, assume_unique=True)
        if missing.size > ADOPT_MISSING * len(ids):
            logger.info(
                "%s lacks %d of %d vectors; search is exact until it is rebuilt",
                self.graph_path,
                missing.size,
                len(ids),
            )
            return
        graph.delete(np.setdiff1d(held, ids, assume_unique=True))
        if missing.size:
            graph.add(missing.tolist(), self._index.reconstruct_batch(missing))
        self._graph = graph

    @property
    def dirty(self) -> bool:
        """Whether a save has something to write."""
        return self._vectors_dirty or self._graph_dirty

    def save(self) -> None:
        """Write what changed atomically: temporary file, fsync, rename, fsync the folder.

        The graph alone may have changed (built once the store is large enough): the
        vectors' file, the larger of the two, is then left as it is.
        """
        import faiss

        with self._lock:
            write_vectors = self._vectors_dirty or not self.path.exists()
            data = faiss.serialize_index(self._index).tobytes() if write_vectors else None
            graph = self._graph if self._graph_dirty or write_vectors else None
            self._vectors_dirty = self._graph_dirty = False
        try:
            if data is not None:
                self.write_file(self.path, data)
            if graph is not None and self.graph_path is not None:
                # Written after the vectors: a reader that finds it behind (a kill between
                # the two) adds what it lacks, see _adopt.
                graph.save(self.graph_path)
        except BaseException:
            # The next save must still write what this one could not.
            self._vectors_dirty = data is not None
            self._graph_dirty = graph is not None
            raise
        self.stamp = file_stamp(self.path)
        if self.graph_path is not None:
            self.graph_stamp = file_stamp(self.graph_path)

    def is_saved_state(self, path: Path, graph_path: Path) -> bool:
        """Whether this store is what the two files hold now (none was replaced since it
        read or wrote them)."""
        return self.stamp == file_stamp(path) and self.graph_stamp == file_stamp(graph_path)


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when the file is replaced: (inode, size, mtime_ns), or None if absent."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def saved_ids(path: Path) -> npt.NDArray[np.int64] | None:
    """The keys of the vectors in the saved file, read from a read-only map of it (None if
    there is no file or it cannot be read: the next pass rebuilds it)."""
    if not path.exists():
        return None
    import faiss
    import numpy as np

    try:
        index: Any = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)
        return np.array(faiss.vector_to_array(index.id_map), dtype=np.int64)
    except Exception as e:  # faiss raises RuntimeError; a torn file may raise others
        logger.warning("%s cannot be read (%s); counting no vectors", path, e)
        return None
