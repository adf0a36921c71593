"""Started by hand in a terminal, the server says what it is; started by a client, it does not."""

from __future__ import annotations

import os
import pty
import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.waiting import lines_until

pytestmark = pytest.mark.slow

GREETING = "this is an MCP server for"


def stderr_until(data: Path, marker: str, *, tty: bool) -> list[str]:
    """The server's stderr lines up to the first containing ``marker`` (then it is killed)."""
    args = [sys.executable, "-m", "micro_rag_mcp", "--data-folder", str(data)]
    args += ["--title", "T", "--inst", "I"]
    primary, secondary = pty.openpty() if tty else (None, None)
    proc = subprocess.Popen(
        args,
        stdin=secondary if tty else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr], daemon=True).start()  # type: ignore[union-attr]
    try:
        return lines_until(
            lines,
            lambda line: marker in line,
            f"{marker!r} in the log",
            timeout=60,
            alive=lambda: proc.poll() is None,
        )
    finally:
        proc.kill()
        proc.wait()
        for fd in (primary, secondary):
            if fd is not None:
                os.close(fd)


def test_in_a_terminal_the_server_says_once_what_it_waits_for(tmp_path: Path) -> None:
    lines = stderr_until(tmp_path, "serving", tty=True)
    greetings = [line for line in lines if GREETING in line]
    assert len(greetings) == 1
    assert "MCP client configuration" in greetings[0]
    # the commands as a client must run them: by full path, no environment activated
    bin_dir = Path(sys.executable).parent
    assert f"-- {bin_dir / 'micro-rag-mcp'} --data-folder" in greetings[0]
    assert f"use {bin_dir / 'micro-rag'} search" in greetings[0]


def test_started_by_a_client_the_server_does_not_greet(tmp_path: Path) -> None:
    lines = stderr_until(tmp_path, "serving", tty=False)
    assert not any(GREETING in line for line in lines)
