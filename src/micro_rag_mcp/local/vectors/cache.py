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
from collections.abc import Callable
from typing import TYPE_CHECKING

from micro_rag_mcp.core.fsutil import atomic_write_bytes
from micro_rag_mcp.local.catalog import Catalog, CatalogStats
from micro_rag_mcp.local.layout import IndexPaths
from micro_rag_mcp.local.vectors.graph import APPROXIMATE_FROM
from micro_rag_mcp.local.vectors.store import VectorStore, WriteFile, file_stamp, saved_ids
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.model.handle import vector_space

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)


class VectorCache:
    def __init__(
        self,
        paths: IndexPaths,
        approximate_from: int = APPROXIMATE_FROM,
        write_file: WriteFile = atomic_write_bytes,
    ) -> None:
        self.paths = paths
        self.approximate_from = approximate_from  # see ann.py
        self.write_file = write_file
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
                and current.is_saved_state(path, self.paths.graph)
            ):
                return current
            space = vector_space(embedder)
            if catalog.get_meta("vector_model") != space:
                if path.exists():
                    logger.warning("the saved vectors are not from %s; they will be rebuilt", space)
                    path.unlink()
                self.paths.graph.unlink(missing_ok=True)
                catalog.set_meta("vector_model", space)
            self._store = self._load(embedder, owner, mapped=False)
            return self._store

    def forget(self) -> None:
        """Let go of the store held: the files were replaced by another index's."""
        with self._lock:
            self._store = None

    def for_catalog(
        self, meta: tuple[str | None, str | None], embedder: Embedder, *, writing: bool
    ) -> VectorStore | None:
        """The freshest vectors for a catalog whose ``reader_meta`` was read already (by
        another thread: a connection serves one thread at a time): the writer's while
        ``writing``, else the file's latest save."""
        owner, vector_model = meta
        path = self.paths.vectors
        with self._lock:
            current = self._store
            fresh = writing or (
                current is not None and current.is_saved_state(path, self.paths.graph)
            )
            if current is not None and current.owner == owner and fresh:
                return current
            if not path.exists() or vector_model != vector_space(embedder):
                self._store = None
                return None
            self._store = self._load(embedder, owner, mapped=True)
            return self._store

    def _load(self, embedder: Embedder, owner: str | None, *, mapped: bool) -> VectorStore:
        return VectorStore.load(
            self.paths.vectors,
            embedder.dimension,
            owner,
            mapped=mapped,
            graph_path=self.paths.graph,
            approximate_from=self.approximate_from,
            write_file=self.write_file,
        )

    def count(
        self,
        catalog: Catalog,
        stats: CatalogStats,
        vectors: VectorStore | None = None,
        space: str | None = None,
    ) -> int:
        """How many catalog chunks have a vector in ``vectors`` (default: the store held;
        with none held, the saved file's, if they are of ``space``, the loaded model's)."""
        vectors = vectors if vectors is not None else self._store
        if vectors is None:  # none held yet (no search has needed them): the saved file's
            return self._count_saved(catalog, stats, space)
        if len(vectors) == 0:  # a pass that begins anew: nothing to count
            return 0
        key = (stats.chunks, stats.max_chunk_id, len(vectors), vectors.owner, vectors.stamp)
        return self._counted(key, catalog, vectors.ids)

    def _count_saved(self, catalog: Catalog, stats: CatalogStats, space: str | None) -> int:
        made_by = reader_meta(catalog)[1]
        if made_by is None or (space is not None and made_by != space):
            return 0
        key = (stats.chunks, stats.max_chunk_id, "saved", file_stamp(self.paths.vectors))
        return self._counted(key, catalog, lambda: saved_ids(self.paths.vectors))

    def _counted(
        self,
        key: tuple[object, ...],
        catalog: Catalog,
        ids: Callable[[], npt.NDArray[np.int64] | None],
    ) -> int:
        import numpy as np

        with self._count_lock:
            if key != self._count_key:
                _, keys = catalog.chunks.id_keys()
                held = ids()
                self._count = 0 if held is None else int(np.isin(keys, held).sum())
                self._count_key = key
            return self._count


def reader_meta(catalog: Catalog) -> tuple[str | None, str | None]:
    """What a reader's vectors must match: the catalog's id and the vector space it holds."""
    return catalog.get_meta("catalog_id"), catalog.get_meta("vector_model")
