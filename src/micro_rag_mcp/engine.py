"""One served folder, as the server (or a command line) sees it.

``Engine`` is a small facade over four parts: the model (``model.ModelHandle``), the
vectors held in memory (``vector_cache.VectorCache``), this process's reindex passes
(``writer.Writer``) and the watcher that refreshes what changes (``watch.Watcher``). It
knows nothing of MCP; what it returns is in ``results``.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import TypeVar

from micro_rag_mcp.ann import APPROXIMATE_FROM
from micro_rag_mcp.arguments import shown
from micro_rag_mcp.catalog import Catalog, CatalogCorrupt, CatalogStats
from micro_rag_mcp.changes import stale_files
from micro_rag_mcp.embedder import Embedder
from micro_rag_mcp.errors import IndexBusy, IndexUnreadable, MicroRagError, NotIndexed, Stopped
from micro_rag_mcp.fsutil import holder_progress, lock_is_held
from micro_rag_mcp.layout import IndexPaths
from micro_rag_mcp.listing import CatalogListing
from micro_rag_mcp.model import ModelHandle
from micro_rag_mcp.pipeline import DEFAULT_STEPS, Steps
from micro_rag_mcp.reader_pool import ReaderPool
from micro_rag_mcp.reading import DEFAULT_MAX_CHARS, read_indexed, with_context
from micro_rag_mcp.results import (
    NO_GOOD_MATCH,
    Hit,
    IndexState,
    IndexSummary,
    ModelState,
    ProgressFn,
    ReindexReport,
    SearchOutcome,
    TextPassage,
    state_notices,
)
from micro_rag_mcp.scanner import PathGlob, PathSet, Scope
from micro_rag_mcp.scope import Resolved, ScopeCache, SearchScope
from micro_rag_mcp.search import SearchParams, VectorSide, search_beside
from micro_rag_mcp.settings import Settings
from micro_rag_mcp.skipped import recorded
from micro_rag_mcp.stats_cache import StatsCache
from micro_rag_mcp.status import summarize
from micro_rag_mcp.vector_cache import VectorCache, reader_meta
from micro_rag_mcp.watch import OFF, STANDBY, WATCHED_ELSEWHERE, Watcher
from micro_rag_mcp.writer import CLIENT, STARTUP, Writer

__all__ = ["Engine", "IndexState", "ReindexReport", "SearchOutcome", "Stopped"]

logger = logging.getLogger(__name__)

WATCH_READY_S = 5.0  # the start-up pass waits this long for the watcher to be set up
SEARCH_THREADS = 4  # searches whose vector channel can run at once

_T = TypeVar("_T")


class Engine:
    """Search and reindex one folder; the model loads and a start-up pass runs in the background."""

    def __init__(
        self,
        settings: Settings,
        load_embedder: Callable[[], Embedder],
        params: SearchParams | None = None,
        *,
        save_every_s: float = 30.0,
        approximate_from: int = APPROXIMATE_FROM,
        steps: Steps = DEFAULT_STEPS,
    ) -> None:
        self.settings = settings
        self.params = params or SearchParams()
        self.paths = IndexPaths(settings.index_folder)
        self._stop = threading.Event()
        self._model = ModelHandle(load_embedder)
        self._vectors = VectorCache(self.paths, approximate_from)
        self._stats = StatsCache()
        self._writer = Writer(
            settings,
            self.paths,
            self._model,
            self._vectors,
            self._stop,
            save_every_s=save_every_s,
            steps=steps,
            follows=lambda: self._watcher.status != OFF,  # what changes is refreshed
        )
        self._watcher = Watcher(
            settings,
            self.paths,
            self.refresh,
            self._holds_under,
            self._stop,
            note=self._note_changes,
            pass_running=lambda: self._writer.running or lock_is_held(self.paths.lock),
        )
        self._startup: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(SEARCH_THREADS, thread_name_prefix="micro-rag-search")
        self._readers = ReaderPool(self.paths.catalog)
        self._scopes = ScopeCache()

    # -- life cycle ----------------------------------------------------------------

    def start(self) -> None:
        """Load the model, run the start-up pass and follow the folder, in the background."""
        self._model.start()
        self._watcher.start()
        self._writer.reserve(STARTUP)  # a client's reindex from now on waits for this pass
        self._startup = threading.Thread(
            target=self._startup_pass, name="micro-rag-startup", daemon=True
        )
        self._startup.start()

    def load_model(self, timeout: float = 300.0) -> None:
        """Load the model now and wait for it (at most ``timeout`` s): for scripts and tests
        that want vectors from their first call. Without this, the first call that needs
        the model starts loading it."""
        self._model.get(timeout)

    def stop(self, timeout: float = 60.0) -> None:
        """Stop every pass at its next step and wait at most ``timeout`` s for the background.

        A step is one file read or 32 chunks embedded (``indexer.EMBED_BATCH``); vectors embedded
        so far are saved. Waiting for the step to end means no model call still runs when the
        process exits (onnxruntime aborts the process if one does).
        """
        self._stop.set()
        # Searches already queued still run (a cancelled one would fail its search with
        # CancelledError); they are short, and new ones run in the caller's thread.
        self._pool.shutdown(wait=False)
        self._readers.close()
        deadline = time.monotonic() + timeout
        if self._startup is not None:
            self._startup.join(max(0.0, deadline - time.monotonic()))
            if self._startup.is_alive():
                logger.warning("the start-up pass did not stop within %g s", timeout)
        if not self._watcher.join(max(0.0, deadline - time.monotonic())):
            logger.warning("the folder watcher did not stop within %g s", timeout)
        self._model.join(max(0.0, deadline - time.monotonic()))

    def _startup_pass(self) -> None:
        # Changes made while the pass reads the folder are the watcher's: let it see them.
        # The turn is held meanwhile (see start), so a client's reindex waits for this pass.
        self._watcher.ready.wait(WATCH_READY_S)
        try:
            report = self._run_pass(STARTUP, None, False, None)
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
            self._watcher.queue_everything()  # done once the other process lets go
        except Stopped:
            logger.info("start-up pass stopped: the server is stopping")
        except MicroRagError as e:
            logger.error("start-up reindex failed: %s", e)
        except Exception:
            logger.exception("start-up reindex failed")
        finally:
            self._writer.release(STARTUP)

    # -- reindex ---------------------------------------------------------------------

    def reindex(
        self,
        *,
        force: bool = False,
        path_glob: str | None = None,
        progress: ProgressFn | None = None,
    ) -> ReindexReport:
        """Bring the index in line with the folder (or the part the glob selects); the server
        runs this as a job (``jobs``). Waits for a pass the server runs by itself (see
        ``writer``); ``IndexBusy`` if another caller's pass runs, here or in another process."""
        scope = PathGlob(path_glob) if path_glob is not None else None
        return self._run_pass(CLIENT, scope, force, progress)

    def refresh(
        self, paths: Iterable[str] | None, *, progress: ProgressFn | None = None
    ) -> ReindexReport:
        """Bring only ``paths`` (relative; a folder takes what is under it) in line, or the
        whole folder for None.

        A background pass, like the start-up pass: a caller's ``reindex`` waits for it.
        It never waits itself: while a pass runs here it raises ``IndexBusy`` at once (the
        watcher then notes the paths for that pass, see ``_note_changes``).
        """
        scope = PathSet(paths) if paths is not None else None
        if self._writer.running:
            raise IndexBusy("a pass is running here; it takes the changes noted for it")
        return self._run_pass("refresh", scope, False, progress)

    def _note_changes(self, paths: Collection[str]) -> None:
        """Note changed paths in the catalog for the pass that holds the index, in this
        process or another; it takes them between two of its files."""
        if not self.paths.catalog.exists():
            return
        catalog = Catalog.open(self.paths.catalog)
        try:
            catalog.add_pending(paths)
        finally:
            catalog.close()

    def _run_pass(
        self, who: str, scope: Scope | None, force: bool, progress: ProgressFn | None
    ) -> ReindexReport:
        """One writer pass; then the model gives back what its batches needed (it idles)."""
        try:
            return self._writer.run(who, scope, force, progress)
        finally:
            self._model.release_memory()

    def _holds_under(self, folder: str) -> bool:
        """Whether the index holds files under ``folder`` (relative)."""
        try:
            catalog = Catalog.open_reader(self.paths.catalog)
        except CatalogCorrupt:
            return False
        try:
            return catalog.holds_under(folder)
        finally:
            catalog.close()

    # -- search ----------------------------------------------------------------------

    def search(
        self,
        query: str,
        top_k: int = 5,
        score_threshold: float = 0.2,
        scope: SearchScope | None = None,
    ) -> SearchOutcome:
        """The best passages for the query (from the files of ``scope``, if given), with
        the index's state and any notices.

        The query's embedding and the vector channel run in a thread of their own while
        this one runs the keyword channel and counts the catalog: at a million chunks each
        channel takes several milliseconds, and the first search after a start waits for
        the model meanwhile.
        """
        notices: list[str] = []
        with contextlib.ExitStack() as held:
            try:
                catalog = held.enter_context(self._readers.reader())
            except CatalogCorrupt:
                self._model_notices(self._model.get(self.settings.model_wait_s), notices)
                state = self._state(None)
                notices.append(
                    "nothing is indexed yet" + (": indexing is running" if state.indexing else "")
                )
                return SearchOutcome([], state, notices)
            within = self._scopes.resolve(catalog, scope) if scope is not None else None
            weak = False
            if within is not None and within.empty:
                notices.append(within.notice())
                hits: list[Hit] = []
                state = self._state(catalog)
            else:
                hits, state, weak = self._search_in(
                    catalog, query, top_k, score_threshold, notices, within
                )
        notices.extend(state_notices(state))
        if weak and hits:
            notices.append(NO_GOOD_MATCH)
        return SearchOutcome(hits, state, notices, no_good_match=weak and bool(hits))

    def _search_in(
        self,
        catalog: Catalog,
        query: str,
        top_k: int,
        score_threshold: float,
        notices: list[str],
        within: Resolved | None = None,
    ) -> tuple[list[Hit], IndexState, bool]:
        try:
            pending = self._beside(self._vector_side, query, reader_meta(catalog), within)
            try:
                stats = self._stats.get(catalog)
                found = search_beside(
                    catalog,
                    query,
                    lambda: pending.result()[1],
                    top_k=top_k,
                    score_threshold=score_threshold,
                    params=self.params,
                    files=within.file_ids if within is not None else None,
                )
            finally:
                # Even after a failure here: no model call may outlive the search (a process
                # that exits during one is aborted by onnxruntime).
                wait([pending])
            embedder, _ = pending.result()
            self._model_notices(embedder, notices)
            hits = with_context(catalog, self._mark_stale(found.hits, notices))
            return hits, self._state(catalog, stats), found.no_good_match
        except sqlite3.DatabaseError as e:
            raise IndexUnreadable(f"the index cannot be read right now ({e}); try again") from e

    def _vector_side(
        self, query: str, meta: tuple[str | None, str | None], within: Resolved | None = None
    ) -> tuple[Embedder | None, VectorSide | None]:
        """The model (waiting for it as long as a search may), and the vector channel's
        part of the search if the model and the vectors are there."""
        embedder = self._model.get(self.settings.model_wait_s)
        if embedder is None or "vector" not in self.params.channels:
            return embedder, None
        query_vector = embedder.embed_query(query)
        store = self._vectors.for_catalog(meta, embedder, writing=self._writer.running)
        if store is None:
            return embedder, None
        keys = within.keys if within is not None else None
        hits = store.search(query_vector, self.params.depth, keys)
        chunks = within.chunk_ids if within is not None else None
        return embedder, VectorSide(store, query_vector, hits, chunks)

    def _beside(self, fn: Callable[..., _T], *args: object) -> Future[_T]:
        """``fn(*args)`` in the search threads (here, once the engine is stopping)."""
        try:
            return self._pool.submit(fn, *args)
        except RuntimeError:  # the pool is shut down: the engine is stopping
            done: Future[_T] = Future()
            try:
                done.set_result(fn(*args))
            except Exception as e:
                done.set_exception(e)
            return done

    def _model_notices(self, embedder: Embedder | None, notices: list[str]) -> None:
        if embedder is not None:
            return
        if self._model.state is ModelState.FAILED:
            notices.append(
                f"the embedding model is unavailable ({self._model.error}); "
                "results come from keyword search only and carry no score"
            )
        else:
            notices.append(
                "the embedding model is still loading; results come from "
                "keyword search only and carry no score"
            )

    # -- read ------------------------------------------------------------------------

    def read(
        self,
        path: str,
        *,
        char_start: int | None = None,
        char_end: int | None = None,
        page: int | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        anchor: str | None = None,
    ) -> TextPassage:
        """The indexed text of one file, a range or page of it, or an anchor's passage
        (see ``reading``)."""
        indexing = self._writer.running or lock_is_held(self.paths.lock)
        try:
            catalog = Catalog.open_reader(self.paths.catalog)
        except CatalogCorrupt as e:
            raise NotIndexed(
                f"no file {shown(path)} in the index: nothing is indexed yet"
                + (" (indexing is running)" if indexing else "")
            ) from e
        try:
            return read_indexed(
                catalog,
                self.settings.data_folder,
                path,
                char_start=char_start,
                char_end=char_end,
                page=page,
                max_chars=max_chars,
                indexing=indexing,
                anchor=anchor,
                exts=self.settings.exts,
            )
        except sqlite3.DatabaseError as e:
            raise IndexUnreadable(f"the index cannot be read right now ({e}); try again") from e
        finally:
            catalog.close()

    def status(self) -> IndexSummary:
        """What the index folder holds, read without writing or loading the model."""
        return summarize(self.paths)

    def listing(self) -> CatalogListing:
        """The indexed files, for a client to page through and follow."""
        return CatalogListing(self.paths.catalog)

    def _mark_stale(self, hits: list[Hit], notices: list[str]) -> list[Hit]:
        """Flag the hits whose file changed since it was indexed, and queue those files."""
        folder = self.settings.data_folder
        if not folder.is_dir():
            notices.append(
                f"the data folder {folder} is gone (deleted, moved or unmounted): results come "
                "from the index as it was, and nothing is reindexed until the folder is back"
            )
            return [replace(h, stale=True) for h in hits]
        stale = stale_files(folder, (h.chunk for h in hits))
        if not stale:
            return hits
        queued = self._watcher.queue_stale(stale)
        notices.append(_stale_notice(stale, queued, self._watcher.status))
        return [replace(h, stale=h.chunk.path in stale) for h in hits]

    # -- state -----------------------------------------------------------------------

    def state(self) -> IndexState:
        """What is indexed, whether a pass runs (here or elsewhere), and the model's state."""
        try:
            catalog = Catalog.open_reader(self.paths.catalog)
        except CatalogCorrupt:
            return self._state(None)
        try:
            return self._state(catalog)
        finally:
            catalog.close()

    def _state(self, catalog: Catalog | None, stats: CatalogStats | None = None) -> IndexState:
        if stats is None and catalog is not None:
            stats = self._stats.get(catalog)
        with_vectors = self._vectors.count(catalog, stats) if catalog is not None and stats else 0
        progress = self._writer.progress
        indexing = self._writer.running
        phase = done = total = None
        if progress is not None:
            phase, done, total = progress.phase, progress.done, progress.total
        elif not indexing:
            other = holder_progress(self.paths.lock)
            if other is not None:
                indexing = True
                phase, done, total = other.get("phase"), other.get("done"), other.get("total")
        return IndexState(
            indexing=indexing,
            phase=phase,
            done=done,
            total=total,
            files_indexed=stats.files_indexed if stats else 0,
            files_failed=stats.files_failed if stats else 0,
            chunks_total=stats.chunks if stats else 0,
            chunks_with_vectors=with_vectors,
            model=self._model.state,
            model_error=self._model.error,
            watch=self._watcher.status,
            queued=len(self._watcher.queue),
            queue_fault=self._watcher.fault,
            skipped=recorded(catalog) if catalog is not None else (),
            write_fault=self._writer.write_fault,
        )


def _stale_notice(stale: set[str], queued: bool, watch: str) -> str:
    names = sorted(stale)
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    many = len(names) > 1
    they, them = ("they", "them") if many else ("it", "it")
    said = (
        f"{len(names)} file{'s' if many else ''} changed on disk since {they} "
        f"{'were' if many else 'was'} indexed ({shown}); results from {them} are marked stale"
    )
    if queued:
        return f"{said}: {they} {'are' if many else 'is'} being reindexed, search again in a moment"
    if watch in (STANDBY, WATCHED_ELSEWHERE):
        return f"{said}: the process that watches this folder will reindex {them}"
    return (
        f"{said}: reindex {them} (the reindex tool, or micro-rag index) to bring {them} "
        "up to date, unless a server that watches this folder does it first"
    )
