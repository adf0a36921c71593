"""The real server over stdio, as ``bench.at_work`` drives it: start, search, reindex, kill.

Each server is ``python -m micro_rag_mcp`` started by the MCP SDK's stdio client in a
process group of its own (``start_new_session``); its log goes to a file. Every group
started is recorded and killed when the benchmark exits, however it exits (Ctrl+C, a
SIGTERM, an error): no server outlives the benchmark.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.perf_common import child_pids

_GROUPS: set[int] = set()  # process groups of the servers started and not yet seen to end


def kill_servers() -> None:
    """SIGKILL every server group this process started (and whatever they started)."""
    for group in list(_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
        _GROUPS.discard(group)


_signalled = False


def _on_signal(signum: int, frame: object) -> None:
    """Ctrl+C or SIGTERM: the servers die first (a client still writing to a live one can
    block its unwinding), then the benchmark unwinds; a second signal ends it at once."""
    global _signalled
    kill_servers()
    if _signalled:
        os._exit(128 + signum)
    _signalled = True
    watchdog = threading.Timer(15.0, os._exit, args=(128 + signum,))
    watchdog.daemon = True  # should the unwinding hang: the servers are dead already
    watchdog.start()
    raise KeyboardInterrupt


atexit.register(kill_servers)


def install_signal_handlers() -> None:
    """Ctrl+C and SIGTERM stop every server and then the benchmark (Ctrl+C even where a
    shell started the benchmark in the background with SIGINT ignored)."""
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)


@dataclass(frozen=True, slots=True)
class State:
    """The ``index`` part of a search result."""

    indexing: bool
    total: int
    vectors: int
    model: str
    queued: int
    raw: dict[str, Any]

    @classmethod
    def of(cls, index: dict[str, Any]) -> State:
        return cls(
            indexing=bool(index.get("indexing")),
            total=int(index.get("chunks_total") or 0),
            vectors=int(index.get("chunks_with_vectors") or 0),
            model=str(index.get("model")),
            queued=int(index.get("queued") or 0),
            raw=index,
        )

    @property
    def share(self) -> float:
        return self.vectors / self.total if self.total else 0.0

    @property
    def missing(self) -> int:
        return max(0, self.total - self.vectors)

    @property
    def idle(self) -> bool:
        """Nothing runs or waits, the model is there and every chunk has its vector."""
        return (
            not self.indexing
            and self.queued == 0
            and self.model == "ready"
            and self.total > 0
            and self.vectors >= self.total
        )

    @property
    def stopped(self) -> bool:
        """Nothing runs or waits, yet chunks lack a vector (a pass gave up)."""
        return not self.indexing and self.queued == 0 and self.model == "ready" and self.missing > 0


@dataclass(frozen=True, slots=True)
class Answer:
    """How a ``reindex`` call ended: after ``seconds``, its result or what went wrong."""

    seconds: float
    result: dict[str, Any] | None
    error: str | None

    @property
    def running(self) -> bool:
        """The answer says its pass goes on (a field such as ``running: true``)."""
        r = self.result or {}
        return any(r.get(k) is True for k in ("running", "still_running", "in_progress"))

    def summary(self) -> str:
        if self.result is None:
            return f"no answer: {self.error}"
        r = self.result
        shown = {k: v for k, v in r.items() if k not in ("files_failed", "notices", "elapsed_ms")}
        return json.dumps(shown, separators=(",", ":"))


class Server:
    """One client session with its server process."""

    def __init__(self, client: Client, pid: int) -> None:
        self.client = client
        self.pid = pid
        self.last: State | None = None

    async def search(self, query: str) -> tuple[list[str], State]:
        """The result paths, in rank order (the server's defaults), and the index state."""
        out = (await self.client.call_tool("search", {"query": query})).structured_content
        assert out is not None, "search returned no structured content"
        self.last = State.of(out["index"])
        return [r["path"] for r in out["results"]], self.last

    async def state(self) -> State:
        return (await self.search("status of the index"))[1]

    async def reindex(self, timeout_s: float, **arguments: Any) -> Answer:
        started = time.monotonic()
        try:
            result = await self.client.call_tool(
                "reindex", arguments, read_timeout_seconds=timeout_s
            )
        except Exception as e:  # a timeout, the connection closing: the answer it got
            return Answer(time.monotonic() - started, None, f"{type(e).__name__}: {e}")
        seconds = time.monotonic() - started
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            return Answer(seconds, None, f"tool error: {text}")
        return Answer(seconds, dict(result.structured_content or {}), None)

    async def wait_idle(self, timeout_s: float = 1800.0, stalled_s: float = 20.0) -> State:
        """The state once idle; raises ``Stalled`` if chunks lack vectors and nothing runs
        for ``stalled_s``, ``TimeoutError`` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        stopped_since: float | None = None
        while True:
            state = await self.state()
            if state.idle:
                return state
            now = time.monotonic()
            stopped_since = (stopped_since or now) if state.stopped else None
            if stopped_since is not None and now - stopped_since > stalled_s:
                raise Stalled(state)
            if now > deadline:
                raise TimeoutError(f"the index was not idle within {timeout_s:g} s: {state.raw}")
            await anyio.sleep(0.5)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)


class Stalled(Exception):
    """Chunks lack a vector and no pass runs or is queued to embed them."""

    def __init__(self, state: State) -> None:
        super().__init__(f"stalled at {state.vectors} of {state.total} vectors")
        self.state = state


def _server_pid(known: set[int]) -> int:
    for pid in child_pids():
        if pid in known:
            continue
        with contextlib.suppress(OSError):
            if b"micro_rag_mcp" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
    raise RuntimeError("the server process was not found among this process's children")


@asynccontextmanager
async def serve(docs: Path, index: Path, precision: str, log: Path) -> AsyncIterator[Server]:
    """A server on ``docs`` (index in ``index``), its log appended to ``log``."""
    args = ["-m", "micro_rag_mcp", "--data-folder", str(docs), "--index-folder", str(index)]
    args += ["--title", "t", "--inst", "i", "--model", "minilm", "--model-precision", precision]
    params = StdioServerParameters(
        command=sys.executable, args=args, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    known = set(child_pids())
    pid: int | None = None
    try:
        with log.open("a") as errlog:
            async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
                pid = _server_pid(known)
                _GROUPS.add(pid)
                yield Server(client, pid)
    finally:
        if pid is not None:  # the client closed: make sure the group is gone, forget it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            _GROUPS.discard(pid)


def saved_vectors(docs: Path, index: Path) -> tuple[int, int]:
    """(chunks, chunks with a saved vector) as ``micro-rag status`` reads them from the
    index folder: no model, no writing, nothing embedded."""
    out = subprocess.run(
        [sys.executable, "-m", "micro_rag_mcp.cli.app", "status", str(docs)]
        + ["--index-folder", str(index), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        raise RuntimeError(f"micro-rag status exited {out.returncode}: {out.stderr.strip()}")
    summary = json.loads(out.stdout)
    return int(summary["chunks"]), int(summary["chunks_with_vectors"])
