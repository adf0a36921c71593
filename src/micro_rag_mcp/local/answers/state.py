"""The local index's state as a search or a client reads it: what is indexed, how many
chunks have vectors, whether a pass runs (here or in another process), the model's state
and how the index follows the folder. The parts of the engine it reads are handed to it
(``AnswerParts``), and so to the searcher and the reader beside it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from micro_rag_mcp.core.fsutil import holder_progress
from micro_rag_mcp.core.results import Counts, IndexState, ModelState, Stage, index_state
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.ingest.skipped import recorded
from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt, CatalogStats
from micro_rag_mcp.local.catalog.stats_cache import StatsCache
from micro_rag_mcp.local.layout import IndexPaths
from micro_rag_mcp.local.passes.writer import Writer
from micro_rag_mcp.local.vectors.cache import VectorCache
from micro_rag_mcp.local.watch.watcher import Watcher
from micro_rag_mcp.model.handle import ModelHandle, vector_space


@dataclass(frozen=True, slots=True)
class AnswerParts:
    """The parts of an engine its answers read from."""

    settings: Settings
    paths: IndexPaths
    model: ModelHandle
    vectors: VectorCache
    writer: Writer
    watcher: Watcher
    pool: ThreadPoolExecutor


class IndexStates:
    """States of one index, its catalog's counts cached until the catalog changes."""

    def __init__(self, parts: AnswerParts) -> None:
        self.paths = parts.paths
        self._model = parts.model
        self._vectors = parts.vectors
        self._writer = parts.writer
        self._watcher = parts.watcher
        self._stats = StatsCache()

    def counts(self, catalog: Catalog) -> CatalogStats:
        """The catalog's counts, read again only once it changed."""
        return self._stats.get(catalog)

    def state(self) -> IndexState:
        """What is indexed, whether a pass runs (here or elsewhere), and the model's state."""
        try:
            catalog = Catalog.open_reader(self.paths.catalog)
        except CatalogCorrupt:
            return self.of(None)
        try:
            return self.of(catalog)
        finally:
            catalog.close()

    def of(self, catalog: Catalog | None, stats: CatalogStats | None = None) -> IndexState:
        """The state, with ``catalog``'s counts (``stats`` if already read), or with
        nothing indexed when there is no catalog."""
        if stats is None and catalog is not None:
            stats = self._stats.get(catalog)
        with_vectors = 0
        if catalog is not None and stats:
            loaded = self._model.get(0) if self._model.state is ModelState.READY else None
            space = vector_space(loaded) if loaded is not None else None
            with_vectors = self._vectors.count(catalog, stats, space=space)
        stage: Stage | None = self._writer.progress
        indexing = self._writer.running
        if stage is None and not indexing:
            stage = holder_progress(self.paths.lock)
            indexing = stage is not None
        counts = Counts()
        if stats:
            counts = Counts(stats.files_indexed, stats.files_failed, stats.chunks, with_vectors)
        return index_state(
            indexing,
            stage,
            counts,
            self._model.state,
            self._model.error,
            watch=self._watcher.status,
            queued=len(self._watcher.queue),
            queue_fault=self._watcher.fault,
            skipped=recorded(catalog) if catalog is not None else (),
            write_fault=self._writer.write_fault,
        )
