"""Running the MCP server in process for a test: a client, once the start-up pass is done."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from micro_rag_mcp.server import build_server
from tests.conftest import make_settings
from tests.fakes import FakeEmbedder


def run_client(fn: Callable[[Client], Awaitable[Any]], data: Path, **settings: Any) -> Any:
    """``fn(client)`` against a server for ``data`` (fake embedder), once it is idle."""
    config = make_settings(data, **settings)

    async def main() -> Any:
        async with Client(build_server(config, FakeEmbedder)) as client:
            await idle(client)
            return await fn(client)

    return anyio.run(main)


async def idle(client: Client, timeout: float = 30.0) -> dict[str, Any]:
    """Poll search until no pass runs and the model is ready."""
    deadline = time.monotonic() + timeout
    while True:
        result = await client.call_tool("search", {"query": "ping"})
        index = result.structured_content["index"]  # type: ignore[index]
        if not index["indexing"] and index["model"] == "ready":
            return index  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"index never became idle: {index}"
        await anyio.sleep(0.05)


def stdio_params(data: Path, *extra: str) -> StdioServerParameters:
    """The real server (``python -m micro_rag_mcp``) on ``data``, as a subprocess."""
    args = ["-m", "micro_rag_mcp", "--data-folder", str(data), "--title", "Docs", "--inst", "x"]
    return StdioServerParameters(
        command=sys.executable, args=[*args, *extra], env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
