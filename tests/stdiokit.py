"""A real server process spoken to over raw stdio lines, for tests of the wire itself."""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.waiting import eventually


class RawServer:
    """``python -m micro_rag_mcp`` with pipes the test drives byte by byte.

    stdout is read only when ``start_reading`` is called, so a test can play a client
    that stops reading; stderr is collected all along.
    """

    def __init__(self, data: Path) -> None:
        command = [sys.executable, "-m", "micro_rag_mcp", "--data-folder", str(data)]
        self.proc = subprocess.Popen(
            [*command, "--title", "Docs", "--inst", "Search."],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._collect_log, daemon=True).start()

    def _collect_log(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.log.append(raw.decode(errors="replace"))

    def read_one(self) -> dict[str, Any]:
        """The next answer on stdout, read here (before ``start_reading``, if ever);
        notifications (the server tells a greeted client of added files) are skipped."""
        assert self.proc.stdout is not None
        while True:
            message: dict[str, Any] = json.loads(self.proc.stdout.readline())
            if "id" in message:
                return message

    def start_reading(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            message = json.loads(raw)
            if "id" in message:  # an answer, not a notification
                self.replies.put(message)

    def send(self, *lines: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        for line in lines:
            raw = line if isinstance(line, bytes) else json.dumps(line).encode()
            self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def initialize(self) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        )

    def reply(self, timeout: float = 60.0) -> dict[str, Any]:
        return self.replies.get(timeout=timeout)

    def exited_within(self, timeout: float) -> int | None:
        """The exit status, polled until ``timeout``; None if still running."""
        try:
            eventually(lambda: self.proc.poll() is not None, "the exit", timeout, interval=0.05)
        except AssertionError:
            return None
        return self.proc.poll()

    def peak_rss_bytes(self) -> int:
        """The server's peak resident memory so far, as its kernel accounts it."""
        return self._status_bytes("VmHWM:")

    def rss_bytes(self) -> int:
        """The server's resident memory now."""
        return self._status_bytes("VmRSS:")

    def _status_bytes(self, field: str) -> int:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        line = next(x for x in status.splitlines() if x.startswith(field))
        return int(line.split()[1]) * 1024

    def wait_searchable(self, query: str, *, idle: bool = False, timeout: float = 300.0) -> None:
        """Initialize, then search (reading the answers here) until there are results, and
        with ``idle`` until the model is loaded and indexing is done."""
        self.initialize()
        assert self.read_one()["id"] == "init"
        calls = itertools.count(1)

        def found() -> bool:
            self.send(search_call(-next(calls), query, top_k=1))
            out = self.read_one()["result"]["structuredContent"]
            index = out["index"]
            settled = index["model"] == "ready" and not index["indexing"]
            return bool(out["results"]) and (settled or not idle)

        eventually(found, f"results for {query!r}", timeout, interval=0.1)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def search_call(request_id: int, query: str, top_k: int = 50) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": query, "top_k": top_k}},
    }
