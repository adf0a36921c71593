"""The index follows the folder: a background watcher that refreshes what changed.

One thread per engine. It first takes ``watch.lock`` in the index folder, so that one
process watches an index folder at a time; a second server on the same folder stands by,
tries again every few seconds, and takes over when the first one stops. Holding the
lock, it either

- watches the folder with ``watchfiles`` (inotify, FSEvents, ReadDirectoryChangesW), or
- scans it every ``poll_interval_s`` seconds (the cheap size and mtime pass of a reindex),
  when the settings ask for that, when the folder lies on a network file system (whose
  remote changes raise no local event), or when the watcher cannot start or stops.

Changed paths wait in a ``ChangeQueue`` until the folder has been quiet for a second,
then go as one batch to the engine's ``refresh``: the same incremental pass as the
``reindex`` tool, scoped to those paths (a folder takes everything under it). A file
still being written waits until its size and mtime have settled.

While another pass holds the index (a first index of hours, a forced pass, ``micro-rag
index`` in another process), changed paths are noted in the catalog for that pass as soon
as they are seen, and the pass takes them at once (``indexer.Follow``); their batch is
tried again later as well. A refresh that fails (a full disk) keeps its batch and tries
again, a little later each time, until it succeeds; meanwhile ``fault`` says why.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Literal

from micro_rag_mcp.core.errors import IndexBusy, MicroRagError, Stopped
from micro_rag_mcp.core.fsutil import lock_is_held, network_fs, try_lock
from micro_rag_mcp.core.results import ReindexReport
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.core.shown import first_few
from micro_rag_mcp.ingest.ignore import Rule
from micro_rag_mcp.local.layout import IndexPaths, ensure_folder
from micro_rag_mcp.local.watch.changes import Batch, ChangeFilter, ChangeQueue

logger = logging.getLogger(__name__)

RETRY_S = 2.0  # a standby process tries the watch lock again; a busy index is retried
RETRY_MAX_S = 60.0  # a refresh that fails is tried again after 2, 4, 8, ... up to this
TICK_S = 0.5  # how often an idle watcher looks at its queue and for a stop
STEP_MS = 100  # watchfiles groups events that come closer together than this

# What the watcher does; its ``status`` says it in words.
WatchKind = Literal["starting", "watching", "polling", "standby", "off"]
STARTING = "starting"  # the thread is setting up: taking the lock, then watching or polling
WATCHING = "watching"
STANDBY = "standby: another process watches this folder"
OFF = "off"
WATCHED_ELSEWHERE = "off here: another process watches this folder"
_SAID: dict[WatchKind, str] = {
    "starting": STARTING,
    "watching": WATCHING,
    "standby": STANDBY,
    "off": OFF,
}


Refresh = Callable[[Collection[str] | None], ReindexReport]  # None: the whole folder
Note = Callable[[Collection[str]], None]  # hands changed paths to the pass holding the index


def polling(interval_s: float) -> str:
    return f"polling every {interval_s:g} s"


class _FolderGone(MicroRagError):
    """The watched folder was removed or replaced: its watches see nothing any more."""


class Watcher:
    """Follows one data folder for one engine, in a thread of its own."""

    def __init__(
        self,
        settings: Settings,
        paths: IndexPaths,
        refresh: Refresh,
        holds_under: Callable[[str], bool],
        stop: threading.Event,
        *,
        note: Note | None = None,
        pass_running: Callable[[], bool] | None = None,
        retry_s: float = RETRY_S,
        retry_max_s: float = RETRY_MAX_S,
    ) -> None:
        self.settings = settings
        self.paths = paths
        self.root = Path(os.path.realpath(settings.data_folder))
        self.queue = ChangeQueue(self.root)
        self.filter = ChangeFilter(settings, self.root)
        self.retry_s = retry_s
        self.retry_max_s = retry_max_s
        self.fault: str | None = None  # why the queued changes wait, while refreshes fail
        self._failures = 0  # refreshes failed in a row
        self._note = note
        self._pass_running = pass_running  # whether a pass holds the index now
        self.ready = threading.Event()  # set once it watches, polls, stands by or gave up
        self._refresh = refresh
        self._holds_under = holds_under  # whether the index holds files under a folder
        self._stop = stop
        self._kind: WatchKind = "off"
        self._interval_s = settings.poll_interval_s  # while polling
        self._thread: threading.Thread | None = None

    @property
    def status(self) -> str:
        """``starting``, ``watching``, ``polling every N s``, ``standby: …``, ``off here: …``
        or ``off``.

        A process that does not watch (``micro-rag``, or ``--no-watch``) still tells whether
        another one does: the holder of the watch lock.
        """
        if self._kind == "polling":
            return polling(self._interval_s)
        if self._kind == "off" and lock_is_held(self.paths.watch_lock):
            return WATCHED_ELSEWHERE
        return _SAID[self._kind]

    @property
    def follows(self) -> bool:
        """Whether this process picks up the folder's changes (it watches or polls)."""
        return self._kind in ("watching", "polling")

    def start(self) -> None:
        if self.settings.watch == "off":
            self.ready.set()
            return
        self._kind = "starting"  # not "off": the lock it may take is not another's
        self._thread = threading.Thread(target=self._run, name="micro-rag-watch", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> bool:
        """Wait at most ``timeout`` s for the thread to end; whether it has."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def queue_stale(self, rels: Iterable[str]) -> bool:
        """Queue files a search found stale; whether this process will refresh them."""
        if self.follows:
            self.queue.add(rels, time.monotonic(), event=False)
            return True
        return False

    def queue_everything(self) -> bool:
        """Queue a pass over the whole folder (the start-up pass could not run); whether
        this process will run it. A busy index is retried until it is free."""
        if self.follows:
            self.queue.add_everything(time.monotonic())
            return True
        return False

    # -- the thread ----------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._serve()
        except Stopped:
            pass
        except Exception:
            logger.exception("following %s failed; changes are no longer picked up", self.root)
        finally:
            self._kind = "off"
            self.ready.set()

    def _serve(self) -> None:
        """Hold the watch lock and follow the folder, or stand by until the lock is free."""
        stood_by = False
        while not self._stop.is_set():
            try:
                ensure_folder(self.paths.folder, self.settings.data_folder)
                fd = try_lock(self.paths.watch_lock)
            except (OSError, MicroRagError) as e:
                logger.warning(
                    "cannot take %s (%s); not following the folder", self.paths.watch_lock, e
                )
                return
            if fd is None:
                if not stood_by:
                    logger.info("another process watches %s; standing by", self.root)
                self._kind = "standby"
                self.ready.set()
                stood_by = True
                self._stop.wait(self.retry_s)
                continue
            try:
                if stood_by:  # nobody watched between the other's release and now
                    logger.info("taking over watching %s", self.root)
                    self.queue.add_everything(time.monotonic())
                self._follow()
            finally:
                os.close(fd)  # releases the watch lock
            return

    def _follow(self) -> None:
        interval = self.settings.poll_interval_s
        if self.settings.watch == "auto":
            remote = _network_fs_of(self.root)
            if remote is None:
                try:
                    self._watch()
                    return
                except Stopped:
                    raise
                except Exception as e:
                    logger.warning(
                        "cannot watch %s (%s); scanning it every %g s instead",
                        self.root,
                        str(e) or type(e).__name__,
                        interval,
                    )
                    self.queue.add_everything(time.monotonic())  # changes may have been missed
            else:
                logger.info(
                    "%s is on %s, a network file system; scanning it every %g s",
                    self.root,
                    remote,
                    interval,
                )
        self._poll(interval)

    def _watch(self) -> None:
        """Watch until stopped, and again after a name that is not UTF-8 ended the stream."""
        identity = _identity(self.root)
        while not self._watched(identity):
            self.queue.add_everything(time.monotonic())  # the batch with the name is lost

    def _watched(self, identity: tuple[int, int]) -> bool:
        from watchfiles import watch

        watching = False
        changes = watch(
            self.root,
            # Filtered here, not by watchfiles: a batch it filters out entirely is not
            # yielded, and a stream of such batches (the index's own files) would keep
            # the queue from ever being looked at.
            watch_filter=None,
            debounce=int(self.queue.quiet_s * 1000),
            step=STEP_MS,
            stop_event=self._stop,
            rust_timeout=int(TICK_S * 1000),
            yield_on_timeout=True,
            debug=False,  # watchfiles' debug output goes to stdout: the protocol's channel
            raise_interrupt=False,
            force_polling=False,
            ignore_permission_denied=False,  # a folder it cannot watch means: poll instead
        )
        with contextlib.closing(changes):
            try:
                for batch in changes:  # the first step sets the watches up, or raises
                    if self._kind != "watching":
                        self._kind = "watching"
                        self.ready.set()
                        logger.info("watching %s for changes", self.root)
                    watching = True
                    self._queue_changes(path for _, path in batch)
                    if _identity(self.root) != identity:
                        raise _FolderGone("the folder was removed or replaced")
                    self._flush()
            except RuntimeError as e:  # watchfiles' WatchfilesRustInternalError
                if not watching or "Unable to decode path" not in str(e):
                    raise
                return False  # a str cannot hold the name; the scan says which it is
        return True

    def _poll(self, interval: float) -> None:
        self._kind, self._interval_s = "polling", interval
        self.ready.set()
        next_scan = time.monotonic() + interval
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_scan:
                self.queue.add_everything(now)
                next_scan = now + interval
            self._flush()
            self._stop.wait(min(TICK_S, max(0.0, next_scan - time.monotonic())))

    def _queue_changes(self, paths: Iterable[str]) -> None:
        rule_files: dict[Path, list[Rule]] = {}  # each folder's ignore files, read once
        rels = {
            rel
            for p in paths
            if (rel := self.filter.relative(p))
            and self._matters(rel)
            and not self.filter.left_out(rel, os.path.isdir(self.root / rel), rule_files)
        }
        if rels:
            self.queue.add(rels, time.monotonic())
            if self._pass_running is not None and self._pass_running():
                # At once, not after the quiet period: the running pass takes them now. A
                # file still being written is read again when its batch is retried.
                self._hand_over(rels)

    def _matters(self, rel: str) -> bool:
        """A folder, or a file of an indexed type; a path gone is a folder if files were
        indexed under it."""
        try:
            st = os.stat(self.root / rel)
        except OSError:
            if self.filter.indexable_name(rel):
                return True
            try:
                return self._holds_under(rel)
            except Exception as e:  # the catalog could not say: look, to be safe
                logger.debug("cannot tell whether %s was a folder: %s", rel, e)
                return True
        return stat.S_ISDIR(st.st_mode) or self.filter.indexable_name(rel)

    def _flush(self) -> None:
        """Refresh the batch that is due, if any; a busy index or a failed refresh is tried
        again later."""
        batch = self.queue.take(time.monotonic())
        if batch is None:
            return
        what = "the folder" if batch.everything else first_few(sorted(batch.paths))
        try:
            report = self._refresh(None if batch.everything else batch.paths)
        except IndexBusy as e:
            logger.debug("not refreshing %s yet: %s", what, e)
            if batch.paths:
                self._hand_over(batch.paths)
            self.queue.put_back(batch, time.monotonic(), self.retry_s)
            return
        except Stopped:
            raise
        except Exception as e:
            self._failed(batch, what, e)
            return
        if self._failures:
            logger.info("refreshing works again: %s", what)
        self._failures, self.fault = 0, None
        changed = report.files_added + report.files_updated + report.files_removed
        logger.log(
            logging.INFO if changed else logging.DEBUG,
            "refreshed %s: %d added, %d updated, %d removed, %d failed, %d ms",
            what,
            report.files_added,
            report.files_updated,
            report.files_removed,
            len(report.files_failed),
            report.elapsed_ms,
        )

    def _hand_over(self, paths: Collection[str]) -> None:
        """Note the paths for the pass that holds the index, which takes them as it goes."""
        if self._note is None:
            return
        try:
            self._note(paths)
        except Exception as e:  # the batch stays queued: it is refreshed once the pass ends
            logger.debug("cannot note %d changed paths for the running pass: %s", len(paths), e)

    def _failed(self, batch: Batch, what: str, e: Exception) -> None:
        """Keep a batch whose refresh failed, and try it again after a longer wait."""
        reason = str(e) or type(e).__name__
        hold = min(self.retry_max_s, self.retry_s * 2**self._failures)
        if self._failures == 0 or reason != self.fault:
            if isinstance(e, MicroRagError):
                logger.warning("cannot refresh %s: %s; trying again in %g s", what, reason, hold)
            else:
                logger.exception("refreshing %s failed; trying again in %g s", what, hold)
        self._failures += 1
        self.fault = reason
        self.queue.put_back(batch, time.monotonic(), hold)


def _identity(folder: Path) -> tuple[int, int]:
    try:
        st = os.stat(folder)
    except OSError as e:
        raise _FolderGone(f"the folder cannot be reached: {e.strerror or e}") from e
    return st.st_dev, st.st_ino


def _network_fs_of(folder: Path) -> str | None:
    try:
        mounts = Path("/proc/self/mounts").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None  # not Linux: trust the watcher
    return network_fs(folder, mounts)
