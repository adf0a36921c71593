"""Telling a full disk from other write failures, so every edge can say "disk full".

SQLite reports a full disk as ``SQLITE_FULL`` ("database or disk is full") while it has a
write-ahead log to grow, but a write that fails in its journal or while syncing comes
back as ``SQLITE_IOERR`` ("disk I/O error"), and Python's own writes as ``ENOSPC``. Each
of them means the same thing to the person reading the message when the index folder's
file system has no room left.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

_SQLITE_FULL = 13
_SQLITE_IOERR = 10
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT})
LOW_SPACE_BYTES = 1024 * 1024  # less free than this, an I/O error is taken for a full disk


def free_bytes(folder: Path) -> int | None:
    """Bytes free to this process in the file system of ``folder`` (or its nearest
    existing parent); None when it cannot be told."""
    for candidate in (folder, *folder.parents):
        try:
            st = os.statvfs(candidate)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize
    return None


def is_disk_full(e: BaseException, folder: Path | None = None) -> bool:
    """Whether ``e`` (or an exception it was raised from) means the disk is full."""
    seen: set[int] = set()
    current: BaseException | None = e
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _NO_ROOM:
            return True
        if isinstance(current, sqlite3.Error):
            code = (getattr(current, "sqlite_errorcode", None) or 0) & 0xFF
            if code == _SQLITE_FULL:
                return True
            if code == _SQLITE_IOERR and folder is not None:
                free = free_bytes(folder)
                if free is not None and free < LOW_SPACE_BYTES:
                    return True
        current = current.__cause__ or current.__context__
    return False


def say_disk_full(e: BaseException, folder: Path | None = None) -> str:
    """``e``'s message, its cause's words replaced by "disk full" when the disk is full.

    ``cannot write the index in /x: disk I/O error`` becomes ``cannot write the index in
    /x: disk full``; a message with no cause of its own gets ``: disk full`` added.
    """
    message = str(e)
    if not is_disk_full(e, folder):
        return message
    cause = str(e.__cause__) if e.__cause__ is not None else ""
    if cause and message.endswith(cause):
        return message[: len(message) - len(cause)] + "disk full"
    return f"{message}: disk full"
