"""Stopping a real server (subprocess, real model) while it embeds: exit 0, work kept.

The client closing stdin, SIGTERM, and a terminal's Ctrl+C (SIGINT to the process group)
must each end the server with status 0, no traceback and no onnxruntime abort, and leave
an index that opens with the vectors embedded so far.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.model.embedder import DIMENSION
from tests.docfactory import make_text
from tests.mcpkit import stdio_params
from tests.waiting import eventually

# About the server's own process (its log, its signals, two side by side): standalone.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("standalone")]

CLIENT_INFO = {"name": "test", "version": "0"}
TOPICS = ["volcano", "glacier", "desert", "rainforest", "coral", "tundra", "savanna", "canyon"]


def write_corpus(data: Path, files: int = 30) -> None:
    """About ten 1,000-character chunks a file: 300 chunks for the default 30 files."""
    for i in range(files):
        paragraphs = [
            f"Report {i}, part {p}, on the {TOPICS[(i + p) % len(TOPICS)]}: field notes on "
            f"its climate, its animals and the people who study it, season after season. " * 3
            for p in range(20)
        ]
        make_text(data / f"report{i:03d}.txt", "\n\n".join(paragraphs))


class Server:
    """The server as a client would start it, with its stderr collected line by line."""

    def __init__(self, data: Path, *flags: str) -> None:
        params = stdio_params(data, *flags)
        self.proc = subprocess.Popen(
            [params.command, *params.args],
            env=params.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, as in a terminal
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._collect, daemon=True)
        self._reader.start()

    def _collect(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.lines.append(raw.decode(errors="replace"))

    def wait_for_log(self, needle: str, timeout: float = 120.0, count: int = 1) -> None:
        def logged() -> bool:
            assert self.proc.poll() is None, "".join(self.lines)
            return sum(needle in line for line in self.lines) >= count

        log = lambda: "".join(self.lines)  # noqa: E731
        eventually(logged, lambda: f"{needle!r} in the log:\n{log()}", timeout, interval=0.05)

    def finish(self, timeout: float = 60.0) -> tuple[int, str]:
        try:
            code = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(10)
        return code, "".join(self.lines)


def stop(server: Server, how: str) -> None:
    if how == "stdin closed":
        assert server.proc.stdin is not None
        server.proc.stdin.close()
    elif how == "SIGTERM":
        server.proc.send_signal(signal.SIGTERM)
    else:  # Ctrl+C in a terminal signals the whole foreground process group
        os.killpg(server.proc.pid, signal.SIGINT)


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM", "SIGINT"])
def test_server_stopped_while_embedding_exits_0_and_keeps_its_vectors(
    tmp_path: Path, how: str
) -> None:
    data = tmp_path / "docs"
    write_corpus(data)
    server = Server(data)
    # Once a step is embedded: a stop seen before the first one would have nothing to keep.
    server.wait_for_log("embedded the first ")
    stop(server, how)
    code, log = server.finish()
    assert code == 0, log
    assert "terminate called" not in log and "Traceback" not in log, log
    if how != "stdin closed":
        assert f"{how}: stopping" in log
    loaded = re.search(r"loaded \S+ from .* in ([\d.]+) s", log)
    ready = re.search(r"model ready, ([\d.]+) s after its load began", log)
    assert loaded and ready, log
    assert float(ready[1]) >= float(loaded[1]), log  # the same load, timed around it
    catalog = Catalog.open(data / "index" / "catalog.sqlite3", check=True)
    try:
        chunk_keys = set(catalog.chunks.id_keys()[1].tolist())
    finally:
        catalog.close()
    saved = VectorStore.load(data / "index" / "faiss.index", DIMENSION)
    assert len(saved) > 0 and set(saved.ids().tolist()) <= chunk_keys


def test_ctrl_c_while_the_server_starts_exits_0_without_a_traceback(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    make_text(data / "a.txt", "Apples grow on trees.")
    server = Server(data)
    server.wait_for_log("serving ")  # logged before the event loop and its signal handling
    stop(server, "SIGINT")
    code, log = server.finish()
    assert code == 0, log
    assert "Traceback" not in log and "SIGINT: stopping" in log, log


def send(server: Server, *messages: dict[str, object]) -> None:
    """JSON-RPC messages on the server's stdin, as a client writes them."""
    assert server.proc.stdin is not None
    for message in messages:
        server.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    server.proc.stdin.flush()


def test_closing_stdin_during_a_clients_reindex_stops_its_pass_and_keeps_vectors(
    tmp_path: Path,
) -> None:
    data = tmp_path / "docs"
    write_corpus(data, files=2)  # a short start-up pass
    server = Server(data, "--no-watch")
    server.wait_for_log("start-up index: ")
    write_corpus(data, files=30)  # the client's pass has many steps left after its first
    hello = {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}}
    send(
        server,
        {"id": 1, "method": "initialize", "params": {**hello, "clientInfo": CLIENT_INFO}},
        {"method": "notifications/initialized"},
        {"id": 2, "method": "tools/call", "params": {"name": "reindex", "arguments": {}}},
    )
    server.wait_for_log("embedded the first ", count=2)  # the client's pass has begun
    stop(server, "stdin closed")
    code, log = server.finish()
    assert code == 0, log
    assert "terminate called" not in log and "Traceback" not in log, log
    assert "reindex stopped: the server is stopping" in log, log
    catalog = Catalog.open(data / "index" / "catalog.sqlite3", check=True)
    try:
        chunk_keys = set(catalog.chunks.id_keys()[1].tolist())
    finally:
        catalog.close()
    saved = VectorStore.load(data / "index" / "faiss.index", DIMENSION)
    assert set(saved.ids().tolist()) <= chunk_keys
    assert 20 < len(saved) < len(chunk_keys)  # the start-up pass's and a step or more
