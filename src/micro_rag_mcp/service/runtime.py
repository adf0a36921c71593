"""Where one user's service of one installation lives, and the checks before it is trusted.

The directory is ``$XDG_RUNTIME_DIR/micro-rag-mcp/<key>`` when that runtime directory is
private to the user, else ``<temp dir>/micro-rag-mcp-<uid>/<key>``; ``<key>`` hashes the
installed package's path, the interpreter's prefix (its virtual environment) and the
version, so two installations never meet. Every directory on the way from the private
root down is opened without following a link and checked on its descriptor (owned by
this user, a directory, no access for group or others): a directory that fails is never
used, and the launch serves in one process instead.

The socket and the lock are reached through ``/proc/self/fd/N/…`` of the checked
directory's descriptor: the path the kernel resolves is the directory that was checked,
and it stays short whatever the directory's own path (a Unix socket's path is limited to
107 bytes).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from micro_rag_mcp import __version__

SOCKET = "service.sock"
LOCK = "start.lock"
PID = "service.pid"
LOG = "service.log"


class UnsafeDirectory(Exception):
    """A runtime directory another user could enter or own: the service is not used."""


def install_key(package_dir: Path | None = None) -> str:
    """A short hash of this installation: the package's path, ``sys.prefix``, the version."""
    here = package_dir or Path(__file__).resolve().parent.parent
    text = f"{here}\n{Path(sys.prefix).resolve()}\n{__version__}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def private_root(runtime_dir: str | None, xdg_runtime_dir: str | None) -> Path:
    """The user's private directory to hold services: ``runtime_dir`` if given (tests and
    users who want it elsewhere), else ``$XDG_RUNTIME_DIR`` when it is the user's and
    private, else a directory named with the uid under the system temp directory."""
    if runtime_dir:
        return Path(runtime_dir)
    if xdg_runtime_dir and _is_private(Path(xdg_runtime_dir)):
        return Path(xdg_runtime_dir) / "micro-rag-mcp"
    return Path(tempfile.gettempdir()) / f"micro-rag-mcp-{os.getuid()}"


def _is_private(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return _problem(st) is None


def _problem(st: os.stat_result) -> str | None:
    """Why a directory with this ``stat`` cannot be trusted, or None."""
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}, not {os.getuid()}"
    if st.st_mode & 0o077:
        return f"has mode {stat.S_IMODE(st.st_mode):04o}, not 0700"
    return None


def open_private(path: Path) -> int:
    """A descriptor on the directory ``path``, made (mode 0700) if missing; UnsafeDirectory
    if it is a link, not ours, or open to others. Checked on the descriptor itself."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise UnsafeDirectory(f"{path} cannot be made: {e.strerror}") from e
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise UnsafeDirectory(f"{path} cannot be opened safely: {e.strerror}") from e
    problem = _problem(os.fstat(fd))
    if problem is not None:
        os.close(fd)
        raise UnsafeDirectory(f"{path} {problem}")
    return fd


@dataclass(frozen=True, slots=True)
class ServiceDir:
    """The checked directory of this installation's service, held open by ``fd``."""

    path: Path
    fd: int

    @classmethod
    def open(cls, root: Path, key: str | None = None) -> ServiceDir:
        """Check (or make) ``root`` and its ``key`` directory; UnsafeDirectory if either
        fails. ``root``'s parent may be shared (the temp directory), ``root`` may not."""
        parent = open_private(root)
        try:
            name = key or install_key()
            os.mkdir(name, 0o700, dir_fd=parent) if not _exists(name, parent) else None
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
        except OSError as e:
            raise UnsafeDirectory(f"{root / (key or '')} cannot be used: {e.strerror}") from e
        finally:
            os.close(parent)
        problem = _problem(os.fstat(fd))
        if problem is not None:
            os.close(fd)
            raise UnsafeDirectory(f"{root / name} {problem}")
        return cls(root / name, fd)

    def reach(self, name: str) -> str:
        """A short path to ``name`` in this directory, through the checked descriptor."""
        return f"/proc/self/fd/{self.fd}/{name}"

    @property
    def socket(self) -> str:
        return self.reach(SOCKET)

    def open_file(self, name: str, flags: int) -> int:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=self.fd)

    def remove(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=self.fd)

    def close(self) -> None:
        os.close(self.fd)


def _exists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True
