"""Stopping a service a test left running."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from tests.waiting import eventually


def stop_service(pid: int, timeout: float = 30.0) -> None:
    """Ask the service ``pid`` to stop (if that process is still a service), and kill it
    if it has not within ``timeout`` seconds."""
    try:
        if b"micro_rag_mcp.service" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return
        os.kill(pid, signal.SIGTERM)
    except (ProcessLookupError, FileNotFoundError):
        return
    try:
        eventually(lambda: ended(pid), f"service {pid} stopped", timeout)
    except AssertionError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def ended(pid: int) -> bool:
    """Whether ``pid`` has ended (reaped here if it was a child of this process)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
