"""This process's reindex passes: one at a time, and the server's own never refuse a client.

A pass takes this process's turn, then the index's lock (``index.lock``, shared with other
processes), reads what changed and embeds what lacks a vector, both at once
(``pipeline``). The server's own passes (the start-up pass, a refresh) run in the
background: a client's reindex that arrives during one waits for it, is shown its
progress, then runs. A plain client reindex (whole folder, not forced) that waits for a
background pass over the whole folder is answered by that pass's report when the folder
is followed here (``follows``): the watcher refreshes what changed after that pass read
it, so a second pass would find nothing more. ``IndexBusy`` is only for a
second client pass while one runs or waits here, and for any pass while another process
holds the lock.

A pass checks for a stop between two steps (one file read, or 32 chunks
embedded): the server stopping, or the caller's progress callback raising ``Stopped``.
Vectors embedded before a stop are saved.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from micro_rag_mcp.core.errors import (
    DataFolderGone,
    IndexBusy,
    IndexWriteError,
    OtherSettings,
    Stopped,
)
from micro_rag_mcp.core.fsutil import LockRecord, WriterLock, describe_holder
from micro_rag_mcp.core.pace import ProgressLog
from micro_rag_mcp.core.results import ModelState, Progress, ProgressFn, ReindexReport
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.core.shown import first_few
from micro_rag_mcp.ingest.extra_readers import lacking
from micro_rag_mcp.ingest.scanner import Scope
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.layout import IndexPaths, ensure_folder, open_for_writing
from micro_rag_mcp.local.passes.choosing import Chooser
from micro_rag_mcp.local.passes.pipeline import DEFAULT_STEPS, Model, Steps, read_and_embed
from micro_rag_mcp.local.rebuild import pass_target, seed_vectors, swap_in
from micro_rag_mcp.local.vectors.cache import VectorCache
from micro_rag_mcp.model.handle import ModelHandle, recorded_model

logger = logging.getLogger(__name__)


class PassKind(StrEnum):
    """Who a pass is for; its value is the name a waiting caller is told."""

    STARTUP = "start-up"  # the pass at the engine's start
    REFRESH = "refresh"  # the watcher's, over what changed
    CLIENT = "client"  # a caller's reindex


POLL_S = 0.25  # how often a waiting caller looks for a stop and for news of the running pass
# A pass that added, changed or removed at least 1/MERGE_SHARE of the folder's files merges
# the CJK pairs' b-trees (``Catalog.merge_pairs``): a smaller one leaves it to FTS5.
MERGE_SHARE = 4


@dataclass(slots=True)
class _Turn:
    kind: PassKind
    progress: Progress | None = None
    claimed: bool = True  # False: reserved for a pass of this kind that has not begun
    whole: bool = False  # a background pass over the whole folder, not forced
    report: ReindexReport | None = None  # once the pass has ended with one
    live: Progress | None = None  # the pass's progress as of now (progress: as published)


class Writer:
    """Runs the reindex passes of one process on one index."""

    def __init__(
        self,
        settings: Settings,
        paths: IndexPaths,
        model: ModelHandle,
        vectors: VectorCache,
        stop: threading.Event,
        *,
        save_every_s: float = 30.0,
        steps: Steps = DEFAULT_STEPS,
        follows: Callable[[], bool] = lambda: False,
    ) -> None:
        self.settings = settings
        self.paths = paths
        self.save_every_s = save_every_s  # how often a long embedding pass saves its vectors
        self.steps = steps
        self.log_every_s = 10.0  # how often a long pass logs how far it is
        self._model = model
        self._vectors = vectors
        self._stop = stop
        self._follows = follows  # whether changes to the folder are refreshed here (watched)
        self._changed = threading.Condition()  # guards the two fields below
        self._turn: _Turn | None = None  # the pass running in this process
        self._client = False  # a client's pass runs or waits for its turn
        self.write_fault: str | None = None  # why the last pass could not write the index
        self.wrote = False  # a pass of this process has written the index
        # The catalog's id and recorded settings as this process's last pass left them.
        self._left: dict[str, str | None] | None = None

    @property
    def running(self) -> bool:
        return self._turn is not None

    @property
    def progress(self) -> Progress | None:
        turn = self._turn
        if turn is None:
            return None
        return turn.live if turn.live is not None else turn.progress

    def run(
        self, kind: PassKind, scope: Scope | None, force: bool, progress: ProgressFn | None
    ) -> ReindexReport:
        """One pass of ``kind`` (a caller's or a background kind) over ``scope``."""
        if kind == PassKind.CLIENT:
            with self._changed:
                if self._client:
                    raise IndexBusy(describe_holder(self.paths.lock))
                self._client = True
        try:
            whole = scope is None and not force
            turn = self._take_turn(kind, progress, whole)
            if turn.report is not None:  # a background pass over the whole folder did it
                return turn.report
            try:
                report = turn.report = self._locked_pass(turn, scope, force, progress)
            except DataFolderGone:
                raise  # nothing to index: said by a notice of its own
            except IndexWriteError as e:
                self.write_fault = str(e)
                raise
            finally:
                with self._changed:
                    self._turn = None
                    self._changed.notify_all()
        finally:
            if kind == PassKind.CLIENT:
                with self._changed:
                    self._client = False
        self.write_fault = None
        self.wrote = True
        return report

    def _locked_pass(
        self, turn: _Turn, scope: Scope | None, force: bool, progress: ProgressFn | None
    ) -> ReindexReport:
        try:
            ensure_folder(self.paths.folder, self.settings.data_folder)
            with WriterLock(self.paths.lock) as lock:
                return self._pass(lock, turn, scope, force, progress)
        except (OSError, sqlite3.Error) as e:
            raise IndexWriteError(f"cannot write the index in {self.paths.folder}: {e}") from e

    def reserve(self, kind: PassKind) -> None:
        """Hold the next turn for a pass of ``kind`` that is about to begin: a caller who
        comes first waits for it, as for a running pass."""
        with self._changed:
            if self._turn is None:
                self._turn = _Turn(kind, claimed=False)

    def release(self, kind: PassKind) -> None:
        """Give up a reservation whose pass will not run after all."""
        with self._changed:
            if self._turn is not None and not self._turn.claimed and self._turn.kind == kind:
                self._turn = None
                self._changed.notify_all()

    def _take_turn(self, kind: PassKind, progress: ProgressFn | None, whole: bool) -> _Turn:
        """Wait for the pass running here to end, passing its progress on to ``progress``
        (at once, then as it goes on); the turn taken, or, for a plain client pass, the
        ended background pass over the whole folder that answers it."""
        running: _Turn | None = None
        while True:
            with self._changed:
                if running is not None:
                    self._changed.wait(POLL_S)
                    if running is not self._turn and self._answers(running, kind, whole):
                        return running
                turn = self._turn
                if turn is not None and not turn.claimed and turn.kind == kind:
                    turn.claimed = True
                    turn.whole = whole and kind != PassKind.CLIENT
                    return turn
                if turn is None:
                    self._turn = _Turn(kind, whole=whole and kind != PassKind.CLIENT)
                    return self._turn
                running = turn
            if self._stop.is_set():
                raise Stopped("the server is stopping")
            if progress is not None and running.progress is not None:
                progress(replace(running.progress, waiting_for=running.kind.value))

    def _answers(self, ended: _Turn, kind: PassKind, whole: bool) -> bool:
        """Whether the report of ``ended`` answers a pass of ``kind`` over ``whole``."""
        return (
            kind == PassKind.CLIENT
            and whole
            and ended.whole
            and ended.report is not None
            and self._follows()
        )

    def _pass(
        self,
        lock: WriterLock,
        turn: _Turn,
        scope: Scope | None,
        force: bool,
        progress: ProgressFn | None,
    ) -> ReindexReport:
        started = time.monotonic()
        log_progress = ProgressLog(lambda line: logger.info("%s", line), self.log_every_s)

        def report(p: Progress) -> None:
            if self._stop.is_set():
                raise Stopped("the server is stopping")
            log_progress(p)
            with self._changed:
                turn.progress = p
                self._changed.notify_all()
            lock.report(LockRecord(lock.pid, p.phase, p.done, p.total))
            if progress is not None:
                progress(p)

        target = pass_target(self.paths)
        rebuilding = target != self.paths
        vectors = self._vectors
        if rebuilding:
            vectors = VectorCache(target, self._vectors.approximate_from)
        catalog = open_for_writing(target)
        checked = False
        try:
            self._check_left(catalog)
            checked = True
            if rebuilding:  # every file, read into the new index
                seed_vectors(self.paths, target, catalog)
                scope, force = None, False
            self._check_chunking(catalog)
            self._record_scope(catalog)
            chooser = self._chooser(catalog)
            model = Model(
                wait=self._model.get,
                failed=lambda: self._model.state is ModelState.FAILED,
                vectors_for=lambda embedder: vectors.for_writer(catalog, embedder),
                choose=chooser,
            )
            try:
                result = read_and_embed(
                    catalog,
                    self.settings,
                    model,
                    scope=scope,
                    force=force,
                    progress=report,
                    stop=self._stop,
                    save_every_s=self.save_every_s,
                    steps=self.steps,
                    live=lambda p: setattr(turn, "live", p),
                )
            finally:
                if chooser is not None:
                    chooser.close()
            stats = catalog.stats()
            changed = result.counts.added + result.counts.updated + result.counts.removed
            if changed and changed * MERGE_SHARE >= stats.files_indexed:
                catalog.merge_pairs()  # a first index, a rebuild, much of the folder anew
            if result.vectors is not None:
                vectors.count(catalog, stats, result.vectors)
            failed = [(p, r) for p, r in catalog.failures() if scope is None or scope.matches(p)]
            done = result.counts.report(failed, stats.chunks, result.embedded, started)
        finally:
            if checked:  # whatever the pass got to: none but it wrote the index meanwhile
                with contextlib.suppress(sqlite3.Error):
                    self._left = _settings_of(catalog)
            catalog.close()
        if rebuilding:
            swap_in(self.paths)
            self._vectors.forget()
        return done

    def _check_left(self, catalog: Catalog) -> None:
        """Refuse the pass if another process re-made the index with other settings since
        this one last wrote it (another ``--model``, ``--model-precision``, chunking or
        file types): the two would otherwise undo each other's work at every change, each
        re-embedding the whole folder. The process that came last keeps the index."""
        left = self._left
        if left is None:
            return
        now = _settings_of(catalog)
        if now["catalog_id"] != left["catalog_id"]:
            return  # another catalog (rebuilt, or made anew): this one has not written it
        changed = [
            f"{key} ({_change(left[key] or 'none', now[key] or 'none')})"
            for key in _SETTINGS
            if now[key] != left[key]
        ]
        if changed:
            raise OtherSettings(
                f"another process re-made this index with other settings since this server "
                f"wrote it ({'; '.join(changed)}): this server leaves the index to it; "
                "restart this server to index with its own settings"
            )

    def _chooser(self, catalog: Catalog) -> Chooser | None:
        """For ``--model auto`` before its choice: the encoder the index recorded, else
        a chooser that samples what this pass stores."""
        if not self._model.waiting:
            return None
        recorded = catalog.get_meta("vector_model")
        if recorded:
            self._model.choose(recorded_model(recorded))
            return None
        return Chooser(catalog, self._model)

    def _check_chunking(self, catalog: Catalog) -> None:
        if _record(catalog, "chunking", self.settings.chunking_id, "every file is re-chunked"):
            catalog.writes.forget_stamps()

    def _record_scope(self, catalog: Catalog) -> None:
        if _only_unreadable_differ(catalog.get_meta("scope"), self.settings):
            return  # another installation's record, which also reads what this one cannot
        _record(
            catalog,
            "scope",
            self.settings.scope_record,
            "files it no longer takes are removed, those it now takes are added",
        )


def _only_unreadable_differ(stored: str | None, settings: Settings) -> bool:
    """Whether a recorded scope is this one's but for suffixes this installation has no
    reader for (one with the ``ocr`` extra takes images): it is left as it is."""
    try:
        recorded = json.loads(stored or "")
        ours = json.loads(settings.scope_record)
        extra = set(recorded["exts"]) - set(ours["exts"])
        recorded["exts"] = [e for e in recorded["exts"] if e not in extra]
    except (ValueError, TypeError, KeyError):
        return False
    return bool(extra) and extra <= lacking(settings.readers) and recorded == ours


# The settings a catalog records (``_record``, ``VectorCache.for_writer``): a writer with
# others re-chunks, re-scopes or re-embeds the folder.
_SETTINGS = ("vector_model", "chunking", "scope")


def _settings_of(catalog: Catalog) -> dict[str, str | None]:
    """The catalog's id and the settings it records."""
    return {key: catalog.get_meta(key) for key in ("catalog_id", *_SETTINGS)}


def _record(catalog: Catalog, key: str, value: str, consequence: str) -> bool:
    """Record a setting the index follows; whether it changed from one recorded before."""
    stored = catalog.get_meta(key)
    if stored == value:
        return False
    if stored is not None:
        logger.warning("%s changed (%s): %s", key, _change(stored, value), consequence)
    catalog.set_meta(key, value)
    return stored is not None


def _change(stored: str, value: str) -> str:
    """What differs between two recorded settings, in a few words: each changed field of
    a JSON object, a list by what it gained and lost."""
    try:
        before, after = json.loads(stored), json.loads(value)
    except ValueError:
        before, after = stored, value
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return f"was {stored}, now {value}"
    said = []
    for field in sorted(before.keys() | after.keys()):
        old, new = before.get(field), after.get(field)
        if old == new:
            continue
        if isinstance(old, list) and isinstance(new, list):
            gained = [x for x in new if x not in old]
            lost = [x for x in old if x not in new]
            parts = [f"{sign}{first_few(xs)}" for sign, xs in (("+", gained), ("-", lost)) if xs]
            said.append(f"{field} {' '.join(parts) or 'reordered'}")
        else:
            said.append(f"{field} was {old}, now {new}")
    return "; ".join(said)
