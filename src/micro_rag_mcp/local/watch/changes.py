"""What changed in the data folder: which paths matter, when a batch of them is due,
and which indexed files no longer match the disk.

Pure bookkeeping over ``os.stat``: the watcher (``watcher.py``) feeds it events, the
engine asks it about the files behind a search's hits. Nothing here reads a file.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.ingest.ignore import Rule, ignored, parse_rules, read_rule_files

QUIET_S = 1.0  # a batch goes once no change came for this long ...
MAX_WAIT_S = 10.0  # ... or once its oldest change waited this long


@dataclass(frozen=True, slots=True)
class Batch:
    """What one refresh looks at: the given paths, or the whole folder (``everything``;
    ``paths`` then holds the changes seen, for a pass that runs elsewhere to take)."""

    paths: frozenset[str]
    everything: bool = False


@dataclass(slots=True)
class _Waiting:
    stamp: tuple[int, int] | None = None  # (size, mtime_ns) when last looked at
    since: float = 0.0  # since when it has been that
    event_at: float = float("-inf")  # when its latest change event came


class ChangeQueue:
    """Changed paths (relative to ``root``) waiting for a quiet moment. Thread-safe."""

    def __init__(
        self, root: Path, *, quiet_s: float = QUIET_S, max_wait_s: float = MAX_WAIT_S
    ) -> None:
        self.root = root
        self.quiet_s = quiet_s
        self.max_wait_s = max_wait_s
        self._lock = threading.Lock()
        self._paths: dict[str, _Waiting] = {}
        self._everything = False
        self._last_change = float("-inf")  # when the latest change event came
        self._oldest = 0.0  # when the oldest waiting change came
        self._hold_until = 0.0  # no batch before this (the index was busy)

    def __len__(self) -> int:
        with self._lock:
            return len(self._paths) + int(self._everything)

    def add(self, rels: Iterable[str], now: float, *, event: bool = True) -> None:
        """Queue paths; a change ``event`` restarts the quiet period, a path queued again
        (or found stale by a search) does not."""
        with self._lock:
            if not self._paths and not self._everything:
                self._oldest = now
            for rel in rels:
                waiting = self._paths.setdefault(rel, _Waiting())
                if event:
                    waiting.event_at = now
            if event:
                self._last_change = now

    def add_everything(self, now: float) -> None:
        with self._lock:
            if not self._paths and not self._everything:
                self._oldest = now
            self._everything = True

    def put_back(self, batch: Batch, now: float, hold_s: float) -> None:
        """Queue a batch again that could not run, and wait ``hold_s`` before the next."""
        if batch.everything:
            self.add_everything(now)
        self.add(batch.paths, now, event=False)
        with self._lock:
            self._hold_until = now + hold_s

    def take(self, now: float) -> Batch | None:
        """The batch to refresh now, if the folder has been quiet long enough.

        A file whose mtime is younger than the quiet period, and whose size and mtime
        are still moving, stays queued: it is being written.
        """
        with self._lock:
            if (not self._paths and not self._everything) or now < self._hold_until:
                return None
            quiet = now - self._last_change >= self.quiet_s
            if not quiet and now - self._oldest < self.max_wait_s:
                # Changes keep coming; the paths that have been quiet themselves go now
                # (one file saved every second is never waited for until the cap).
                return self._take_paths(now, lambda w: now - w.event_at >= self.quiet_s)
            if self._everything:  # the paths come along: a busy index is handed them
                self._everything = False
                paths = frozenset(self._paths)
                self._paths.clear()
                return Batch(paths, everything=True)
            return self._take_paths(now, lambda w: True)

    def _take_paths(self, now: float, quiet: Callable[[_Waiting], bool]) -> Batch | None:
        """The waiting paths that are ``quiet`` and settled, taken off the queue (the
        lock is held)."""
        if self._everything:
            return None
        ready = [rel for rel, w in self._paths.items() if quiet(w) and self._settled(rel, w, now)]
        for rel in ready:
            del self._paths[rel]
        if ready:
            self._oldest = now if not self._paths else self._oldest
        return Batch(frozenset(ready)) if ready else None

    def _settled(self, rel: str, waiting: _Waiting, now: float) -> bool:
        try:
            st = os.stat(self.root / rel)
        except OSError:
            return True  # gone or unreadable: the refresh records which
        if stat.S_ISDIR(st.st_mode) or time.time_ns() - st.st_mtime_ns >= self.quiet_s * 1e9:
            return True
        stamp = (st.st_size, st.st_mtime_ns)
        if stamp != waiting.stamp:
            waiting.stamp, waiting.since = stamp, now
            return False
        return now - waiting.since >= self.quiet_s  # an mtime in the future, but still


class ChangeFilter:
    """Which changed paths can matter to the index, and as what relative path."""

    def __init__(self, settings: Settings, root: Path) -> None:
        self.root = root
        self.exts = settings.exts
        self.skip_dirs = settings.skip_dirs
        index = os.path.realpath(settings.index_folder)
        inside = index.startswith(str(root) + os.sep)
        self._index_rel = os.path.relpath(index, root).replace(os.sep, "/") if inside else None
        self._prefix = str(root) + os.sep
        self._always: list[Rule] = parse_rules(settings.exclude)

    def relative(self, path: str) -> str | None:
        """``path`` relative to the root, or None if no change there can matter: outside
        the root, the root itself, hidden, in a skipped folder or in the index folder."""
        if not path.startswith(self._prefix):
            return None
        parts = path[len(self._prefix) :].split(os.sep)
        if any(not p or p.startswith(".") or p in self.skip_dirs for p in parts):
            return None
        rel = "/".join(parts)
        index = self._index_rel
        if index is not None and (rel == index or rel.startswith(index + "/")):
            return None
        return rel

    def left_out(
        self, rel: str, is_dir: bool, rule_files: dict[Path, list[Rule]] | None = None
    ) -> bool:
        """Whether the scan would leave ``rel`` out, as the scanner decides it: by
        ``--exclude``, by the ``.gitignore``/``.ignore`` files of the folders above it, or
        because a folder above it is a virtual environment. Such a change causes no work.
        ``rule_files`` keeps the rules read per folder across the paths of one batch."""
        cache = {} if rule_files is None else rule_files
        parts = rel.split("/")
        rules: list[Rule] = []
        folder, prefix = self.root, ""
        for depth, name in enumerate(parts):
            if folder not in cache:
                cache[folder] = read_rule_files(folder, prefix)
            rules += cache[folder]
            last = depth == len(parts) - 1
            here = f"{prefix}{name}"
            as_dir = is_dir or not last
            if ignored(self._always, here, as_dir) or ignored(rules, here, as_dir):
                return True
            folder, prefix = folder / name, here + "/"
            if not last and (folder / "pyvenv.cfg").exists():
                return True
        return False

    def indexable_name(self, rel: str) -> bool:
        return os.path.splitext(rel)[1].lower() in self.exts


def stale_files(root: Path, chunks: Iterable[StoredChunk]) -> set[str]:
    """Paths among ``chunks`` whose file no longer matches what was indexed, or is gone.

    One ``stat`` per distinct file, never a read. A stamp recorded as too recent to trust
    (size -1) is compared by mtime alone.
    """
    stale: set[str] = set()
    seen: set[str] = set()
    for c in chunks:
        if c.path in seen:
            continue
        seen.add(c.path)
        try:
            st = os.stat(root / c.path)
        except OSError:
            stale.add(c.path)
            continue
        moved = st.st_mtime_ns != c.mtime_ns or (c.size >= 0 and st.st_size != c.size)
        if moved or not stat.S_ISREG(st.st_mode):
            stale.add(c.path)
    return stale
