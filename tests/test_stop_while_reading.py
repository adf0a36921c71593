"""A server told to stop while its reader is busy with one file stops at once.

OCR of a scan can take a minute; a stop must not wait for it. The file's reader
(``tests/readerkit.py``, added through ``main``'s ``readers``) waits until it is killed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import Stopped
from micro_rag_mcp.ingest.isolation import IsolatedReader
from tests.indexkit import write
from tests.readerkit import waiting
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = (
    "import sys; from micro_rag_mcp.serve.main import main; "
    "sys.exit(main(sys.argv[1:], readers='tests.readerkit'))"
)
# Far beyond the 5 s a stop is meant to take (a stop still waits for the model's load, which
# takes seconds on a busy machine), and half the 120 s a read is allowed.
EXIT_DEADLINE_S = 60.0


@pytest.mark.slow  # a real server process
def test_closing_stdin_while_a_file_is_read_ends_the_server(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    write(data / "note.md", "a note read before the scan")
    scan = write(data / "scan.png", "a scan whose reader never ends")
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "--data-folder", str(data), "--title", "D", "--inst", "S"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    log: list[str] = []
    threading.Thread(
        target=lambda: log.extend(raw.decode(errors="replace") for raw in proc.stderr or ()),
        daemon=True,
    ).start()
    try:
        assert proc.stdin is not None
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        proc.stdin.write(json.dumps(hello).encode() + b"\n")
        proc.stdin.flush()
        eventually(lambda: waiting(scan).exists(), "the scan's reader waits", timeout=120)
        proc.stdin.close()
        deadline = time.monotonic() + EXIT_DEADLINE_S
        eventually(lambda: proc.poll() is not None, "the server exits", EXIT_DEADLINE_S)
        assert time.monotonic() <= deadline
        assert proc.returncode == 0, "".join(log)
        assert "Traceback" not in "".join(log)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_a_read_under_way_is_abandoned_when_its_pass_halts(tmp_path: Path) -> None:
    scan = write(tmp_path / "scan.png", "a scan whose reader never ends")
    halt = threading.Event()
    errors: list[BaseException] = []

    def read() -> None:
        with IsolatedReader(tmp_path, 600, halt=halt, readers="tests.readerkit") as reader:
            try:
                reader.read(scan, max_bytes=1 << 20)
            except BaseException as e:
                errors.append(e)

    reading = threading.Thread(target=read, daemon=True)
    reading.start()
    eventually(lambda: waiting(scan).exists(), "the scan's reader waits")
    halt.set()
    reading.join(EXIT_DEADLINE_S)
    assert not reading.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], Stopped)
