"""The FAISS copy this process holds in memory, and when to read the file again.

One store at a time: while this process writes, its writer's store is the freshest there
is and searches share it; otherwise searches use the file's latest save, mapped read-only
(so processes on one folder share its pages) and mapped again only when the file changes
(another process saved) or the catalog is another one. The writer never reuses a mapped
store: it loads a copy it can change. How many catalog chunks have a vector is counted
once per change of either side.
"""

from __future__ import annotations

import logging
import threading

from micro_rag_mcp.catalog import Catalog, CatalogStats
from micro_rag_mcp.embedder import Embedder
from micro_rag_mcp.indexer import vector_space
from micro_rag_mcp.layout import IndexPaths
from micro_rag_mcp.vectors import VectorStore, file_stamp

logger = logging.getLogger(__name__)


class VectorCache:
    def __init__(self, paths: IndexPaths) -> None:
        self.paths = paths
        self._store: VectorStore | None = None
        self._lock = threading.Lock()
        self._count_key: tuple[object, ...] | None = None
        self._count = 0
        self._count_lock = threading.Lock()

    def for_writer(self, catalog: Catalog, embedder: Embedder) -> VectorStore:
        """The lock holder's store: loaded from disk, emptied if from another model.

        A cached store is reused only while the file is the one it last read or wrote and
        the catalog is the one it was loaded for (chunk ids restart with a new catalog).
        """
        owner = catalog.get_meta("catalog_id")
        path = self.paths.vectors
        with self._lock:
            current = self._store
            if (
                current is not None
                and not current.mapped
                and current.owner == owner
                and current.stamp == file_stamp(path)
            ):
                return current
            space = vector_space(embedder)
            if catalog.get_meta("vector_model") != space:
                if path.exists():
                    logger.warning("the saved vectors are not from %s; they will be rebuilt", space)
                    path.unlink()
                catalog.set_meta("vector_model", space)
            self._store = VectorStore.load(path, embedder.dimension, owner)
            return self._store

    def for_reader(
        self, catalog: Catalog, embedder: Embedder, *, writing: bool
    ) -> VectorStore | None:
        """The freshest vectors: the writer's while ``writing``, else the file's latest save."""
        owner = catalog.get_meta("catalog_id")
        path = self.paths.vectors
        with self._lock:
            current = self._store
            stamp = file_stamp(path)
            fresh = writing or (current is not None and current.stamp == stamp)
            if current is not None and current.owner == owner and fresh:
                return current
            if stamp is None or catalog.get_meta("vector_model") != vector_space(embedder):
                self._store = None
                return None
            self._store = VectorStore.load(path, embedder.dimension, owner, mapped=True)
            return self._store

    def count(
        self, catalog: Catalog, stats: CatalogStats, vectors: VectorStore | None = None
    ) -> int:
        """How many catalog chunks have a vector in ``vectors`` (default: the store held)."""
        vectors = vectors if vectors is not None else self._store
        if vectors is None:
            return 0
        import numpy as np

        key = (stats.chunks, stats.max_chunk_id, len(vectors), vectors.owner, vectors.stamp)
        with self._count_lock:
            if key != self._count_key:
                ids = np.asarray(catalog.chunk_ids(), dtype=np.int64)
                self._count = int(np.isin(ids, vectors.ids(), assume_unique=True).sum())
                self._count_key = key
            return self._count
