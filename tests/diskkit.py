"""Disk faults for tests: a small real file system (tmpfs with ``size=``) for a full disk,
root only; and a folder whose listing fails."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest


@contextmanager
def small_filesystem(folder: Path, size: str = "2m") -> Iterator[Path]:
    """``folder`` as a tmpfs of ``size``; the test is skipped where none can be mounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, leave_bytes: int = 0) -> None:
    """Fill ``folder``'s file system until at most ``leave_bytes`` are free."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    with open(folder / ".filler", "wb") as f, suppress(OSError):  # the last block may not fit
        f.write(bytes(max(0, free - leave_bytes)))


def remount_read_only(folder: Path) -> None:
    """Make a ``small_filesystem`` read-only: no process writes it, root included."""
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True, capture_output=True)


def fail_listing(monkeypatch: pytest.MonkeyPatch, folder_name: str) -> None:
    """Make listing any folder called ``folder_name`` fail with an I/O error."""
    real = os.scandir

    def flaky(path: str) -> object:
        if os.path.basename(str(path)) == folder_name:
            raise OSError(5, "Input/output error")
        return real(path)

    monkeypatch.setattr(os, "scandir", flaky)
