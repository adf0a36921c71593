"""One served folder: the model, the index, the background start-up, search and reindex.

This is the pure core the MCP server wraps; it knows nothing of MCP.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from micro_rag_mcp.catalog import Catalog, CatalogCorrupt, CatalogStats
from micro_rag_mcp.embedder import Embedder
from micro_rag_mcp.errors import IndexBusy, IndexUnreadable, IndexWriteError, MicroRagError
from micro_rag_mcp.fsutil import WriterLock, describe_holder, holder_progress
from micro_rag_mcp.indexer import Progress, ProgressFn, embed_missing, sync_files, vector_space
from micro_rag_mcp.layout import IndexPaths, ensure_folder, open_for_writing
from micro_rag_mcp.scanner import PathGlob
from micro_rag_mcp.search import Hit, SearchParams, hybrid_search
from micro_rag_mcp.settings import Settings
from micro_rag_mcp.vectors import VectorStore, file_stamp

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)


class Stopped(Exception):
    """The server is shutting down; a background reindex stops between two files."""


@dataclass(frozen=True, slots=True)
class IndexState:
    indexing: bool
    phase: str | None
    done: int | None
    total: int | None
    files_indexed: int
    files_failed: int
    chunks_total: int
    chunks_with_vectors: int
    model: str  # "ready", "loading" or "unavailable: <reason>"


@dataclass(frozen=True, slots=True)
class ReindexReport:
    files_added: int
    files_updated: int
    files_removed: int
    files_unchanged: int
    files_failed: list[tuple[str, str]]
    chunks_total: int
    chunks_embedded: int
    elapsed_ms: int


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: list[Hit]
    state: IndexState
    notices: list[str] = field(default_factory=list)


class Engine:
    """The state of one served folder, shared by the tools and the background start-up."""

    def __init__(
        self,
        settings: Settings,
        load_embedder: Callable[[], Embedder],
        params: SearchParams | None = None,
        *,
        save_every_s: float = 30.0,
    ) -> None:
        self.settings = settings
        self.save_every_s = save_every_s  # how often a long embedding pass saves its vectors
        self.paths = IndexPaths(settings.index_folder)
        self.params = params or SearchParams()
        self._load_embedder = load_embedder
        self._embedder: Embedder | None = None
        self._model_error: str | None = None
        self._model_ready = threading.Event()
        self._vectors: VectorStore | None = None
        self._vectors_lock = threading.Lock()
        self._vector_count_key: tuple[object, ...] | None = None
        self._count_lock = threading.Lock()
        self._vector_count = 0
        self._writing = threading.Lock()  # held by this process's running reindex
        self._progress: Progress | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- life cycle ----------------------------------------------------------------

    def start(self) -> None:
        """Load the model and run the start-up reindex, both in the background."""
        for name, target in (("model", self.load_model), ("startup", self._startup)):
            t = threading.Thread(target=target, name=f"micro-rag-{name}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float = 5.0) -> None:
        """Ask background work to stop between two files, and wait a little for it."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout)

    def load_model(self) -> None:
        started = time.monotonic()
        try:
            self._embedder = self._load_embedder()
            logger.info("model ready in %.1f s", time.monotonic() - started)
        except MicroRagError as e:
            self._model_error = str(e)
            logger.error("embedding model unavailable: %s", e)
        except Exception as e:
            self._model_error = f"{type(e).__name__}: {e}"
            logger.exception("embedding model failed to load")
        finally:
            self._model_ready.set()

    def _startup(self) -> None:
        try:
            report = self.reindex()
            logger.info(
                "start-up index: %d added, %d updated, %d removed, %d unchanged, %d failed, "
                "%d chunks, %d ms",
                report.files_added,
                report.files_updated,
                report.files_removed,
                report.files_unchanged,
                len(report.files_failed),
                report.chunks_total,
                report.elapsed_ms,
            )
        except IndexBusy as e:
            logger.info("not indexing at start-up: %s; serving the index as it is", e)
        except Stopped:
            logger.info("start-up reindex stopped: shutting down")
        except MicroRagError as e:
            logger.error("start-up reindex failed: %s", e)
        except Exception:
            logger.exception("start-up reindex failed")

    def wait_model(self, timeout: float | None) -> Embedder | None:
        self._model_ready.wait(timeout)
        return self._embedder

    # -- reindex ---------------------------------------------------------------------

    def reindex(
        self,
        *,
        force: bool = False,
        path_glob: str | None = None,
        progress: ProgressFn | None = None,
    ) -> ReindexReport:
        """Bring the index in line with the folder (or the part the glob selects)."""
        scope = PathGlob(path_glob) if path_glob is not None else None
        if not self._writing.acquire(blocking=False):
            raise IndexBusy(describe_holder(self.paths.lock))
        try:
            ensure_folder(self.paths.folder)
            with WriterLock(self.paths.lock) as lock:
                return self._run(lock, scope, force, progress)
        except (OSError, sqlite3.Error) as e:
            raise IndexWriteError(f"cannot write the index in {self.paths.folder}: {e}") from e
        finally:
            self._progress = None
            self._writing.release()

    def _run(
        self, lock: WriterLock, scope: PathGlob | None, force: bool, progress: ProgressFn | None
    ) -> ReindexReport:
        started = time.monotonic()

        def report(p: Progress) -> None:
            if self._stop.is_set():
                raise Stopped
            self._progress = p
            lock.report({"pid": lock.pid, "phase": p.phase, "done": p.done, "total": p.total})
            if progress is not None:
                progress(p)

        catalog = open_for_writing(self.paths)
        try:
            self._check_chunking(catalog)
            vectors = self._writer_vectors(catalog) if self._embedder is not None else None
            counts = sync_files(
                catalog, vectors, self.settings, scope=scope, force=force, progress=report
            )
            embedded = 0
            if not self._threads and not self._model_ready.is_set():
                self.load_model()  # an engine used without start(): nobody else will
            embedder = self.wait_model(None)
            if embedder is not None:
                vectors = self._writer_vectors(catalog)
                embedded = embed_missing(
                    catalog, vectors, embedder, progress=report, save_every_s=self.save_every_s
                )
                self._count_vectors(catalog, vectors, catalog.stats())
            failed = [(p, r) for p, r in catalog.failures() if scope is None or scope.matches(p)]
            return ReindexReport(
                files_added=counts.added,
                files_updated=counts.updated,
                files_removed=counts.removed,
                files_unchanged=counts.unchanged,
                files_failed=failed,
                chunks_total=catalog.stats().chunks,
                chunks_embedded=embedded,
                elapsed_ms=int((time.monotonic() - started) * 1000),
            )
        finally:
            catalog.close()

    def _check_chunking(self, catalog: Catalog) -> None:
        stored = catalog.get_meta("chunking")
        if stored != self.settings.chunking_id:
            if stored is not None:
                logger.warning(
                    "chunking changed from %s to %s: every file will be re-chunked",
                    stored,
                    self.settings.chunking_id,
                )
                catalog.forget_stamps()
            catalog.set_meta("chunking", self.settings.chunking_id)

    def _writer_vectors(self, catalog: Catalog) -> VectorStore:
        """The lock holder's vector store: loaded from disk, emptied if from another model.

        A cached store is reused only while the file is the one it last read or wrote and
        the catalog is the one it was loaded for (chunk ids restart with a new catalog).
        """
        embedder = self._embedder
        assert embedder is not None
        owner = catalog.get_meta("catalog_id")
        with self._vectors_lock:
            current = self._vectors
            if (
                current is not None
                and current.owner == owner
                and current.stamp == file_stamp(self.paths.vectors)
            ):
                return current
            space = vector_space(embedder)
            if catalog.get_meta("vector_model") != space:
                if self.paths.vectors.exists():
                    logger.warning("the saved vectors are not from %s; they will be rebuilt", space)
                    self.paths.vectors.unlink()
                catalog.set_meta("vector_model", space)
            self._vectors = VectorStore.load(self.paths.vectors, embedder.dimension, owner)
            return self._vectors

    # -- search ----------------------------------------------------------------------

    def search(self, query: str, top_k: int = 5, score_threshold: float = 0.2) -> SearchOutcome:
        notices: list[str] = []
        embedder = self.wait_model(self.settings.model_wait_s)
        query_vector: npt.NDArray[np.float32] | None = None
        if embedder is not None:
            query_vector = embedder.embed_query(query)
        elif self._model_error:
            notices.append(
                f"the embedding model is unavailable ({self._model_error}); "
                "results come from keyword search only and carry no score"
            )
        else:
            notices.append(
                "the embedding model is still loading; results come from "
                "keyword search only and carry no score"
            )
        try:
            catalog = Catalog.open_reader(self.paths.catalog)
        except CatalogCorrupt:
            state = self.state(None)
            notices.append(
                "nothing is indexed yet" + (": indexing is running" if state.indexing else "")
            )
            return SearchOutcome([], state, notices)
        try:
            vectors = self._reader_vectors(catalog) if embedder is not None else None
            hits = hybrid_search(
                catalog,
                vectors,
                query,
                query_vector,
                top_k=top_k,
                score_threshold=score_threshold,
                params=self.params,
            )
            state = self.state(catalog)
        except sqlite3.DatabaseError as e:
            raise IndexUnreadable(f"the index cannot be read right now ({e}); try again") from e
        finally:
            catalog.close()
        notices.extend(_state_notices(state))
        return SearchOutcome(hits, state, notices)

    def _reader_vectors(self, catalog: Catalog) -> VectorStore | None:
        """The freshest vectors: ours while we write, else the file's latest save."""
        embedder = self._embedder
        assert embedder is not None
        owner = catalog.get_meta("catalog_id")
        with self._vectors_lock:
            current = self._vectors
            stamp = file_stamp(self.paths.vectors)
            fresh = self._writing.locked() or (current is not None and current.stamp == stamp)
            if current is not None and current.owner == owner and fresh:
                return current
            if stamp is None or catalog.get_meta("vector_model") != vector_space(embedder):
                self._vectors = None
                return None
            self._vectors = VectorStore.load(self.paths.vectors, embedder.dimension, owner)
            return self._vectors

    # -- state -----------------------------------------------------------------------

    def state(self, catalog: Catalog | None = None) -> IndexState:
        own = None
        if catalog is None:
            try:
                catalog = Catalog.open_reader(self.paths.catalog)
                own = catalog
            except CatalogCorrupt:
                catalog = None
        try:
            stats = catalog.stats() if catalog is not None else None
            with_vectors = (
                self._count_vectors(catalog, self._vectors, stats)
                if catalog is not None and stats is not None
                else 0
            )
        finally:
            if own is not None:
                own.close()
        progress = self._progress
        indexing = self._writing.locked()
        phase = done = total = None
        if progress is not None:
            phase, done, total = progress.phase, progress.done, progress.total
        elif not indexing:
            other = holder_progress(self.paths.lock)
            if other is not None:
                indexing = True
                phase, done, total = other.get("phase"), other.get("done"), other.get("total")
        if self._embedder is not None:
            model = "ready"
        elif self._model_error is not None:
            model = f"unavailable: {self._model_error}"
        else:
            model = "loading"
        return IndexState(
            indexing=indexing,
            phase=phase,
            done=done,
            total=total,
            files_indexed=stats.files_indexed if stats else 0,
            files_failed=stats.files_failed if stats else 0,
            chunks_total=stats.chunks if stats else 0,
            chunks_with_vectors=with_vectors,
            model=model,
        )

    def _count_vectors(
        self, catalog: Catalog, vectors: VectorStore | None, stats: CatalogStats
    ) -> int:
        """How many catalog chunks have a vector, cached while neither side changes."""
        if vectors is None:
            return 0
        import numpy as np

        key = (stats.chunks, stats.max_chunk_id, len(vectors), vectors.owner, vectors.stamp)
        with self._count_lock:
            if key != self._vector_count_key:
                ids = np.asarray(catalog.chunk_ids(), dtype=np.int64)
                self._vector_count = int(np.isin(ids, vectors.ids(), assume_unique=True).sum())
                self._vector_count_key = key
            return self._vector_count


def _state_notices(state: IndexState) -> list[str]:
    notices: list[str] = []
    if state.indexing:
        where = f" ({state.phase} {state.done}/{state.total})" if state.total else ""
        notices.append(f"indexing is running{where}; results may be incomplete")
    if state.files_indexed == 0 and not state.indexing:
        notices.append(
            "no documents are indexed: the folder has no readable files of the "
            "configured types, or reindex has not run"
        )
    missing = state.chunks_total - state.chunks_with_vectors
    if missing > 0 and state.model == "ready":
        notices.append(
            f"{missing} of {state.chunks_total} chunks have no vector yet; "
            "those can only match by keyword and carry no score"
        )
    return notices
