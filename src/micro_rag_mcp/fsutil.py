"""Small file-system helpers: atomic writes and the writer's lock."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from micro_rag_mcp.errors import IndexBusy, IndexWriteError


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so a crash leaves the old file or the new one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """Make a rename or unlink in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WriterLock:
    """An exclusive ``flock`` on ``index.lock``, held by whoever writes the index.

    The kernel drops the lock when the holder's file is closed or its process dies, so
    it can never go stale. The holder keeps a one-line JSON progress record in the file,
    which a refused caller reads to say how far the running reindex is.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pid = os.getpid()
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise IndexBusy; never waits for a running reindex."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise IndexWriteError(f"cannot open {self.path}: {e.strerror}") from e
        # A few quick retries: a reader probing the lock (holder_progress) holds it shared
        # for microseconds, and must not make a writer fail.
        for attempt in range(4):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise IndexWriteError(f"cannot lock {self.path}: {e.strerror}") from e
                if attempt == 3:
                    os.close(fd)
                    raise IndexBusy(describe_holder(self.path)) from e
                time.sleep(0.02)
        self._fd = fd
        self.report({"pid": self.pid, "phase": "starting"})

    def report(self, progress: dict[str, Any]) -> None:
        """Overwrite the progress record (best effort: a full disk must not stop indexing)."""
        if self._fd is None:
            return
        line = (json.dumps(progress, sort_keys=True) + "\n").encode()
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, line, 0)

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        os.close(self._fd)  # closing drops the flock
        self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_progress(path: Path) -> dict[str, Any] | None:
    """The progress record the lock holder wrote, if it can be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def holder_progress(path: Path) -> dict[str, Any] | None:
    """The progress of a reindex running in another process, or None if none runs.

    A progress record left by a killed process is recognised as stale: its lock is free.
    """
    progress = read_progress(path)
    if progress is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return progress  # held: a reindex is running
    finally:
        os.close(fd)  # closing drops a shared lock we may have taken
    return None


def describe_holder(path: Path) -> str:
    """A sentence saying who holds the lock and how far it is."""
    p = read_progress(path)
    if not p:
        return "a reindex is already running on this index; try again when it finishes"
    who = "this server" if p.get("pid") == os.getpid() else f"process {p.get('pid', '?')}"
    phase = p.get("phase", "working")
    done, total = p.get("done"), p.get("total")
    where = f" {done}/{total}" if done is not None and total else ""
    return (
        f"a reindex is already running on this index ({who}: {phase}{where}); "
        "try again when it finishes"
    )
