"""Helpers for tests that drive the server through the SDK's client: in process, or the
real server as a subprocess over stdio."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.server import MCPServer, Server
from mcp.server.runner import serve_dual_era_loop
from mcp.shared.memory import create_client_server_memory_streams

from micro_rag_mcp.serve.server import build_server
from micro_rag_mcp.service.indexes import Indexes, SessionInfo, SharedModels
from micro_rag_mcp.store import open_store
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings
from tests.waiting import DEADLINE_S, until


async def index_state(client: Client) -> dict[str, Any]:
    """The ``index`` block of a search."""
    result = await client.call_tool("search", {"query": "ping"})
    return result.structured_content["index"]  # type: ignore[no-any-return,index]


async def wait_for_index(
    client: Client,
    condition: Callable[[dict[str, Any]], bool],
    what: str,
    timeout: float = DEADLINE_S,
    interval: float = 0.05,
) -> dict[str, Any]:
    """Search until the index block satisfies ``condition``; that block."""
    last: dict[str, Any] = {}

    async def holds() -> bool:
        index = await index_state(client)
        last.clear()
        last.update(index)
        return condition(last)

    await until(holds, lambda: f"{what}; last {last}", timeout, interval)
    return last


def idle(index: dict[str, Any]) -> bool:
    """No pass runs and the model is ready (or, for an empty folder, still waits for
    text to choose its encoder by: ``--model auto``)."""
    empty = index["model"] == "waiting" and index["chunks_total"] == 0
    return not index["indexing"] and (index["model"] == "ready" or empty)


def complete(index: dict[str, Any]) -> bool:
    """Idle, and every chunk has its vector."""
    return idle(index) and index["chunks_with_vectors"] == index["chunks_total"] > 0


async def wait_idle(client: Client) -> dict[str, Any]:
    """Search until no pass runs and the model is ready; the index block then."""
    return await wait_for_index(client, idle, "the index became idle")


async def wait_complete(client: Client, timeout: float = 120.0) -> dict[str, Any]:
    """Search until the index is idle with every vector made (the real model: a first
    index of a few files can take a while on a loaded machine); the index block then."""

    def done(index: dict[str, Any]) -> bool:
        return complete(index) or (idle(index) and index["chunks_total"] == 0)

    return await wait_for_index(client, done, "never complete", timeout, interval=0.2)


def run_client(
    fn: Callable[[Client], Awaitable[Any]],
    data: Path,
    client_options: dict[str, Any] | None = None,
    *,
    shared: bool = False,
    **settings: Any,
) -> Any:
    """``fn(client)`` against a server for ``data`` (fake embedder), once it is idle;
    ``client_options`` go to the SDK's ``Client``. ``shared``: a session of the service,
    on an engine it would share with other sessions on the folder."""
    # The fake stands in for an encoder named: with auto, a folder with no text yet
    # would wait for its choice (the model "waiting"), never idle.
    config = make_settings(data, **{"model": "minilm", **settings})
    indexes = Indexes(
        lambda s, load: open_store(s, load), SharedModels(lambda s, encoder: FakeEmbedder()), 0
    )

    async def main() -> Any:
        handle = indexes.attach(config, SessionInfo("test", os.getpid())) if shared else None
        server = build_server(config, FakeEmbedder, shared=handle)
        async with Client(server, **(client_options or {})) as client:
            await wait_idle(client)
            return await fn(client)

    try:
        return anyio.run(main)
    finally:
        indexes.stop_all()


@asynccontextmanager
async def one_run(server: MCPServer[Any]) -> AsyncIterator[Callable[..., Client]]:
    """One run of ``server`` (its lifespan entered once) and a maker of clients that are
    sessions of that run, as a server over HTTP has many: each a ``Client`` (with the
    options given) over streams of its own, in the era its ``mode`` opens with."""
    low = server._lowlevel_server  # the SDK's loop serves the low-level server
    async with low.lifespan(low) as state:
        yield lambda **options: Client(_session(low, state), **options)


@asynccontextmanager
async def _session(low: Server[Any], state: Any) -> AsyncIterator[TransportStreams]:
    async with create_client_server_memory_streams() as (client_streams, (read, write)):
        options = low.create_initialization_options()
        serve = partial(serve_dual_era_loop, low, read, write, lifespan_state=state)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(partial(serve, init_options=options))
            try:
                yield client_streams
            finally:
                await client_streams[1].aclose()  # the server's loop ends at end of input


def stdio_params(
    data: Path, *extra: str, title: str = "Docs", inst: str = "Search the docs."
) -> StdioServerParameters:
    """The real server (``python -m micro_rag_mcp``) on ``data``, as a subprocess."""
    args = ["-m", "micro_rag_mcp", "--data-folder", str(data), "--title", title, "--inst", inst]
    return StdioServerParameters(
        command=sys.executable, args=[*args, *extra], env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
