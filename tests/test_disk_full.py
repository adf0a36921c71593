"""A full disk is "disk full" in the CLI's message and exit status 1, never an abort."""

from __future__ import annotations

import errno
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from micro_rag_mcp.core.diskspace import is_disk_full, say_disk_full
from micro_rag_mcp.core.errors import IndexWriteError
from tests.diskkit import fill, small_filesystem

pytestmark = pytest.mark.slow


def _raised_from(cause: BaseException) -> IndexWriteError:
    try:
        try:
            raise cause
        except BaseException as e:
            raise IndexWriteError(f"cannot write the index in /i: {e}") from e
    except IndexWriteError as outer:
        return outer


def test_no_room_from_python_or_sqlite_is_a_full_disk() -> None:
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = 13  # type: ignore[attr-defined]
    for cause in (OSError(errno.ENOSPC, "No space left on device"), full):
        e = _raised_from(cause)
        assert is_disk_full(e)
        assert say_disk_full(e) == "cannot write the index in /i: disk full"
    other = _raised_from(OSError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(other)
    assert say_disk_full(other) == "cannot write the index in /i: [Errno 13] Permission denied"


def test_a_disk_io_error_on_a_full_file_system_is_a_full_disk(tmp_path: Path) -> None:
    io_error = sqlite3.OperationalError("disk I/O error")
    io_error.sqlite_errorcode = 778  # type: ignore[attr-defined]  # SQLITE_IOERR_WRITE
    e = _raised_from(io_error)
    assert not is_disk_full(e, tmp_path)  # room to spare: a real I/O error
    with small_filesystem(tmp_path / "small") as small:
        fill(small)
        assert is_disk_full(e, small)
        assert say_disk_full(e, small) == "cannot write the index in /i: disk full"


def test_the_cli_says_disk_full_and_exits_1_on_a_full_disk(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    for i in range(40):
        (data / f"d{i:02d}.txt").write_text(f"Field notes {i} on the glacier. " * 400)
    with small_filesystem(tmp_path / "disk", "1m") as disk:
        fill(disk, leave_bytes=200 * 1024)
        index = disk / "index"  # a new folder: the index folder must be ours or empty
        run = subprocess.run(
            [sys.executable, "-m", "micro_rag_mcp.cli.app", "index", str(data)]
            + ["--index-folder", str(index)],
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert run.returncode == 1, run.stderr
    assert run.stderr.rstrip().endswith(f"cannot write the index in {index}: disk full")
    assert "terminate called" not in run.stderr
