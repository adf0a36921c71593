"""One served folder, as the server (or a command line) sees it.

``Engine`` is a small facade over its parts: the model (``model.ModelHandle``), the
vectors held in memory (``vectors.cache.VectorCache``), this process's reindex passes
(``passes.writer.Writer``), the watcher that refreshes what changes
(``watch.watcher.Watcher``), and what it answers without writing: a searcher
(``answers.searcher``), a reader (``answers.reader``) and the index's state
(``answers.state``). It knows nothing of MCP; what it returns is in ``results``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from micro_rag_mcp.core.errors import IndexBusy, MicroRagError, Stopped
from micro_rag_mcp.core.fsutil import atomic_write_bytes, lock_is_held
from micro_rag_mcp.core.results import (
    IndexState,
    IndexSummary,
    ProgressFn,
    ReindexReport,
    SearchOutcome,
    TextPassage,
)
from micro_rag_mcp.core.settings import ModelName, Settings
from micro_rag_mcp.ingest.extra_readers import lacking
from micro_rag_mcp.ingest.scanner import PathGlob, PathSet, Scope
from micro_rag_mcp.local.answers.listing import CatalogListing
from micro_rag_mcp.local.answers.reader import Reader
from micro_rag_mcp.local.answers.searcher import Searcher
from micro_rag_mcp.local.answers.state import AnswerParts, IndexStates
from micro_rag_mcp.local.answers.status import recorded_identity, summarize
from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt
from micro_rag_mcp.local.layout import IndexPaths
from micro_rag_mcp.local.passes.pipeline import DEFAULT_STEPS, Steps
from micro_rag_mcp.local.passes.writer import PassKind, Writer
from micro_rag_mcp.local.rebuild import noted_catalog
from micro_rag_mcp.local.vectors.cache import VectorCache
from micro_rag_mcp.local.vectors.graph import APPROXIMATE_FROM
from micro_rag_mcp.local.vectors.store import WriteFile
from micro_rag_mcp.local.watch.watcher import OFF, Watcher
from micro_rag_mcp.model.choice import Loader
from micro_rag_mcp.model.handle import ModelHandle, reads_all_languages, recorded_model
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.reading import DEFAULT_MAX_CHARS
from micro_rag_mcp.search.scope import SearchScope

__all__ = ["Engine", "IndexState", "ReindexReport", "SearchOutcome", "Stopped"]

logger = logging.getLogger(__name__)

WATCH_READY_S = 5.0  # the start-up pass waits this long for the watcher to be set up
SEARCH_THREADS = 4  # searches whose vector channel can run at once


class Engine:
    """Search and reindex one folder; the model loads and a start-up pass runs in the background."""

    def __init__(
        self,
        settings: Settings,
        load_embedder: Loader,
        params: SearchParams | None = None,
        *,
        save_every_s: float = 30.0,
        approximate_from: int = APPROXIMATE_FROM,
        steps: Steps = DEFAULT_STEPS,
        write_vectors: WriteFile = atomic_write_bytes,
    ) -> None:
        self.settings = settings
        self.params = params or SearchParams()
        self.paths = IndexPaths(settings.index_folder)
        self._stop = threading.Event()
        self._model = ModelHandle(load_embedder, recorded=self._recorded_encoder)
        self._vectors = VectorCache(self.paths, approximate_from, write_vectors)
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
        parts = AnswerParts(
            settings,
            self.paths,
            self._model,
            self._vectors,
            self._writer,
            self._watcher,
            self._pool,
        )
        self.states = IndexStates(parts)
        self.searcher = Searcher(parts, self.search_params, self.states, self._rebuild)
        self.reader = Reader(parts, self._rebuild)

    # -- life cycle ----------------------------------------------------------------

    def start(self) -> None:
        """Load the model, run the start-up pass and follow the folder, in the background."""
        self._model.start()
        self._watcher.start()
        self._writer.reserve(PassKind.STARTUP)  # a client's reindex from now on waits for this pass
        self._startup = threading.Thread(
            target=self._startup_pass, name="micro-rag-startup", daemon=True
        )
        self._startup.start()

    def search_params(self) -> SearchParams:
        """What a search runs with now: ``params``, told whether the loaded encoder reads
        every language (a query in CJK is then read by meaning too)."""
        multilingual = reads_all_languages(self._model.get(0.0))
        return replace(self.params, multilingual_encoder=multilingual)

    def load_model(self, timeout: float = 300.0) -> None:
        """Load the model now and wait for it (at most ``timeout`` s): for scripts and tests
        that want vectors from their first call. Without this, the first call that needs
        the model starts loading it."""
        self._model.get(timeout)

    def stop(self, timeout: float = 60.0) -> None:
        """Stop every pass at its next step and wait at most ``timeout`` s for the background.

        A step is one file read or 32 chunks embedded (``ingest.files.EMBED_BATCH``);
        vectors embedded so far are saved. Waiting for the step to end means no model call
        still runs when the process exits (onnxruntime aborts the process if one does).
        """
        self._stop.set()
        # Searches already queued still run (a cancelled one would fail its search with
        # CancelledError); they are short, and new ones run in the caller's thread.
        self._pool.shutdown(wait=False)
        self.searcher.close()
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
            report = self._run_pass(PassKind.STARTUP, None, False, None)
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
            self._writer.release(PassKind.STARTUP)

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
        return self._run_pass(PassKind.CLIENT, scope, force, progress)

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
        return self._run_pass(PassKind.REFRESH, scope, False, progress)

    def _note_changes(self, paths: Collection[str]) -> None:
        """Note changed paths in the catalog for the pass that holds the index, in this
        process or another; it takes them between two of its files."""
        catalog = noted_catalog(self.paths)
        if catalog is None:
            return
        try:
            catalog.writes.add_pending(paths)
        finally:
            catalog.close()

    def _run_pass(
        self, who: PassKind, scope: Scope | None, force: bool, progress: ProgressFn | None
    ) -> ReindexReport:
        """One writer pass; then the model gives back what its batches needed (it idles)."""
        try:
            return self._writer.run(who, scope, force, progress)
        finally:
            self._model.release_memory()

    def _rebuild(self) -> None:
        """Index the whole folder again, in the background: the index was deleted."""
        if self._watcher.queue_everything():
            return
        threading.Thread(target=self._rebuild_now, name="micro-rag-rebuild", daemon=True).start()

    def _rebuild_now(self) -> None:
        logger.warning("the index in %s is gone; rebuilding it", self.paths.folder)
        try:
            self.refresh(None)
        except (IndexBusy, Stopped):
            pass  # a pass that runs now rebuilds it; a stopping server does not
        except MicroRagError as e:
            logger.error("rebuilding the index failed: %s", e)

    def _recorded_encoder(self) -> ModelName | None:
        """The encoder the index's vectors were made with, if it recorded one (``--model
        auto`` keeps it)."""
        space = recorded_identity(self.settings.index_folder).get("vector_space")
        return recorded_model(space) if space else None

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

    def search(
        self,
        query: str,
        top_k: int = 5,
        score_threshold: float = 0.2,
        scope: SearchScope | None = None,
    ) -> SearchOutcome:
        """The best passages for the query (``Searcher.search``)."""
        return self.searcher.search(query, top_k, score_threshold, scope)

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
        """The indexed text of one file or a part of it (``Reader.read``)."""
        return self.reader.read(
            path,
            char_start=char_start,
            char_end=char_end,
            page=page,
            max_chars=max_chars,
            anchor=anchor,
        )

    def state(self) -> IndexState:
        """What is indexed, whether a pass runs, and the model's state (``IndexStates.state``)."""
        return self.states.state()

    def status(self) -> IndexSummary:
        """What the index folder holds, read without writing or loading the model."""
        return summarize(self.paths, lacking(self.settings.readers))

    def written_elsewhere(self) -> bool:
        return not self._writer.running and lock_is_held(self.paths.lock)

    def listing(self) -> CatalogListing:
        """The indexed files, for a client to page through and follow."""
        return CatalogListing(self.paths.catalog)
