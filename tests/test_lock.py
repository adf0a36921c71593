"""The writer's lock: whether a reindex runs is decided by the kernel's flock, never by
the progress record, which only says how far a live holder is."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import IndexBusy
from micro_rag_mcp.core.fsutil import (
    LockRecord,
    WriterLock,
    describe_holder,
    holder_progress,
    lock_is_held,
    read_progress,
)

HOLD = """
import os, sys
from pathlib import Path
from micro_rag_mcp.core.fsutil import LockRecord, WriterLock
lock = WriterLock(Path(sys.argv[1])); lock.acquire()
lock.report(LockRecord(os.getpid(), "embedding", 1234567, 7654321))
print("locked", flush=True)
sys.stdin.read()  # held until the test closes our stdin or kills us
"""


def hold(path: Path, code: str = HOLD) -> subprocess.Popen[bytes]:
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
    return holder


@pytest.fixture
def dead_holder(tmp_path: Path) -> Iterator[Path]:
    """A lock file whose holder was killed mid-reindex: its record stays, its flock is gone."""
    path = tmp_path / "index.lock"
    holder = hold(path)
    holder.kill()
    holder.communicate()  # reaped: the kernel has closed its files and dropped its lock
    assert read_progress(path) == LockRecord(holder.pid, "embedding", 1234567, 7654321)
    yield path


def test_a_killed_holders_record_is_not_taken_for_a_running_reindex(dead_holder: Path) -> None:
    assert not lock_is_held(dead_holder)
    assert holder_progress(dead_holder) is None
    assert "1234567" not in describe_holder(dead_holder)


def test_a_reader_probing_the_lock_is_not_taken_for_a_writer(dead_holder: Path) -> None:
    probe = os.open(dead_holder, os.O_RDONLY)
    try:
        fcntl.flock(probe, fcntl.LOCK_SH)  # a reader caught in the middle of its probe
        assert not lock_is_held(dead_holder)
        with pytest.raises(IndexBusy) as refused:
            WriterLock(dead_holder, patience_s=0.05).acquire()
    finally:
        os.close(probe)
    message = str(refused.value)
    assert "1234567" not in message and "already running" not in message
    assert len(message.splitlines()) == 1


def test_a_new_holder_writes_its_record_over_a_longer_stale_one(dead_holder: Path) -> None:
    with WriterLock(dead_holder) as lock:
        assert read_progress(dead_holder) == LockRecord(lock.pid, "starting")
        lock.report(LockRecord(lock.pid, "reading", 1, 2))
        assert read_progress(dead_holder) == LockRecord(lock.pid, "reading", 1, 2)
    assert read_progress(dead_holder) is None
    assert not lock_is_held(dead_holder)


FLOCK_ONLY = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()  # held until the test closes our stdin or kills us
"""


def test_a_held_lock_means_a_reindex_runs_even_before_its_record(tmp_path: Path) -> None:
    path = tmp_path / "index.lock"
    holder = hold(path, FLOCK_ONLY)
    try:
        assert lock_is_held(path)
        assert holder_progress(path) == LockRecord()
        assert "already running" in describe_holder(path)
        with pytest.raises(IndexBusy, match="already running"):
            WriterLock(path).acquire()
    finally:
        holder.kill()
        holder.communicate()
    assert not lock_is_held(path)


def test_progress_record_is_written_for_each_phase_and_its_end_not_for_every_step(
    tmp_path: Path,
) -> None:
    path = tmp_path / "index.lock"
    with WriterLock(path, report_every_s=3600) as lock:

        def record(phase: str, done: int, total: int) -> LockRecord | None:
            lock.report(LockRecord(lock.pid, phase, done, total))
            return read_progress(path)

        assert record("reading", 1, 10) == LockRecord(lock.pid, "reading", 1, 10)
        assert record("reading", 2, 10) == LockRecord(lock.pid, "reading", 1, 10)  # too soon
        assert record("reading", 10, 10) == LockRecord(lock.pid, "reading", 10, 10)  # its end
        assert record("embedding", 0, 5) == LockRecord(lock.pid, "embedding", 0, 5)


def test_a_record_another_program_wrote_is_read_for_what_it_holds_of_ours(tmp_path: Path) -> None:
    path = tmp_path / "index.lock"
    path.write_text('{"pid": "12", "phase": 3, "done": true, "total": 9, "extra": 1}\n')
    assert read_progress(path) == LockRecord(total=9)
    path.write_text("[1, 2]\n")
    assert read_progress(path) is None
