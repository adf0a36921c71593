"""Small file-system helpers: atomic writes, the writer's lock and the watcher's."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from micro_rag_mcp.core.errors import IndexBusy, IndexWriteError

_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
# File systems whose changes made elsewhere raise no local event: scan them instead.
NETWORK_FS = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "afs", "ceph", "glusterfs", "lustre", "9p"}
    | {"virtiofs", "vboxsf", "drvfs", "fuse.sshfs", "fuse.rclone", "fuse.glusterfs", "davfs"}
)


def _umask() -> int:
    """The process's umask, read without changing it where the system tells it."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # at import, before any thread of ours creates a file
    os.umask(mask)
    return mask


_FILE_MODE = 0o644 & ~_umask()  # as SQLite creates the catalog (its default permissions)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so a crash leaves the old file or the new one.

    The new file keeps the mode of the one it replaces, or else gets the mode SQLite
    gives the catalog (0644 less the umask): a temporary file's private 0600 would leave
    some of the index's files unreadable where the rest can be read. A file system that
    refuses the mode (some network mounts) keeps its own.
    """
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = _FILE_MODE
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            with contextlib.suppress(OSError):
                os.fchmod(f.fileno(), mode)
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


@dataclass(frozen=True, slots=True)
class LockRecord:
    """What the holder of the writer's lock says of its pass: its process, its phase and
    how far it is (each unknown until written; a record another program wrote is read
    for what it holds of these, and nothing else)."""

    pid: int | None = None
    phase: str | None = None
    done: int | None = None
    total: int | None = None

    def json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None}, sort_keys=True)

    @classmethod
    def parsed(cls, data: object) -> LockRecord | None:
        if not isinstance(data, dict):
            return None

        def number(key: str) -> int | None:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        phase = data.get("phase")
        return cls(
            number("pid"),
            phase if isinstance(phase, str) else None,
            number("done"),
            number("total"),
        )


class WriterLock:
    """An exclusive ``flock`` on ``index.lock``, held by whoever writes the index.

    The kernel drops the lock when the holder's file is closed or its process dies, so
    it can never go stale. The holder keeps a one-line JSON progress record in the file,
    which a refused caller reads to say how far the running reindex is; the record of a
    holder that was killed stays behind, so it is believed only while the lock is held.
    """

    def __init__(self, path: Path, *, patience_s: float = 2.0, report_every_s: float = 0.2) -> None:
        self.path = path
        self.pid = os.getpid()
        self.patience_s = patience_s  # how long readers probing the lock may delay us
        self.report_every_s = report_every_s
        self._fd: int | None = None
        self._width = 0
        self._reported: tuple[object, float] = (None, 0.0)  # phase and time of the last write

    def acquire(self) -> None:
        """Take the lock or raise IndexBusy; never waits for a running reindex.

        A reader probing the lock (``lock_is_held``) holds it shared for an instant;
        that delays the writer (up to ``patience_s``) rather than refusing it.
        """
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise IndexWriteError(f"cannot open {self.path}: {e.strerror}") from e
        deadline = time.monotonic() + self.patience_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in _BUSY:
                    os.close(fd)
                    raise IndexWriteError(f"cannot lock {self.path}: {e.strerror}") from e
                if _held_exclusively(fd):
                    os.close(fd)
                    raise IndexBusy(describe_holder(self.path)) from e
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise IndexBusy(
                        "another process held the index lock for a moment; try again"
                    ) from e
            time.sleep(0.01)
        self._fd = fd
        # A killed holder's record may be longer than ours: pad over all of it.
        with contextlib.suppress(OSError):
            self._width = os.fstat(fd).st_size
        self.report(LockRecord(self.pid, "starting"))

    def report(self, progress: LockRecord) -> None:
        """Overwrite the progress record (best effort: a full disk must not stop indexing).

        Written in place over the old record, padded to its length, so a reader never
        finds the file empty or half one record and half another. Within one phase, at
        most every ``report_every_s`` (a pass over many unchanged files reports often),
        and its last record.
        """
        if self._fd is None:
            return
        phase, now = progress.phase, time.monotonic()
        last_phase, last_at = self._reported
        ends = progress.done == progress.total  # a phase's last record is kept
        if phase == last_phase and now - last_at < self.report_every_s and not ends:
            return
        self._reported = (phase, now)
        body = progress.json()
        line = (body.ljust(self._width - 1) + "\n").encode()
        self._width = max(self._width, len(line))
        with contextlib.suppress(OSError):
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


def _held_exclusively(fd: int) -> bool:
    """Whether a writer holds the lock: a shared lock is refused only by an exclusive one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno in _BUSY
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def lock_is_held(path: Path) -> bool:
    """Whether a writer holds the lock at ``path`` now, as the kernel sees it.

    A holder that died holds nothing, whatever its record says.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        return _held_exclusively(fd)
    finally:
        os.close(fd)  # closing drops a shared lock we may have taken


def read_progress(path: Path) -> LockRecord | None:
    """The progress record the lock holder wrote, if it can be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    return LockRecord.parsed(data)


def holder_progress(path: Path) -> LockRecord | None:
    """The progress of a reindex running in another process, or None if none runs.

    Whether one runs is the lock's answer; the record only says how far it is, and is
    empty while a holder has not written one yet.
    """
    if not lock_is_held(path):
        return None
    record = read_progress(path)
    return record if record is not None else LockRecord()


def describe_holder(path: Path) -> str:
    """A sentence saying who holds the lock and how far it is."""
    p = read_progress(path) if lock_is_held(path) else None
    if p is None or p == LockRecord():
        return "a reindex is already running on this index; try again when it finishes"
    who = "this server" if p.pid == os.getpid() else f"process {p.pid or '?'}"
    phase = p.phase or "working"
    done, total = p.done, p.total
    where = f" {done}/{total}" if done is not None and total else ""
    return (
        f"a reindex is already running on this index ({who}: {phase}{where}); "
        "try again when it finishes"
    )


def try_lock(path: Path) -> int | None:
    """A descriptor holding an exclusive ``flock`` on ``path``, or None if another holds it.

    Closing the descriptor (or the end of the process) releases it. Raises OSError when
    the file cannot be opened or locked for another reason than a holder.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in _BUSY:
            return None
        raise
    return fd


def network_fs(folder: Path, mounts: str) -> str | None:
    """The type of network file system ``folder`` lies on, read from ``/proc/mounts`` text."""
    best, best_type = "", ""
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[1])  # "\040": " "
        inside = str(folder) == point or str(folder).startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, best_type = point, fields[2]
    return best_type if best_type in NETWORK_FS else None
