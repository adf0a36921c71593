"""Helpers for tests that drive the server through the SDK's in-process client."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
from mcp import Client

from tests.conftest import DEADLINE_S


async def until(condition: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    """Poll ``condition`` until it holds; fail, naming ``what``, after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"within {timeout:g} s: {what}"
        await anyio.sleep(0.02)


async def index_state(client: Client) -> dict[str, Any]:
    """The ``index`` block of a search."""
    result = await client.call_tool("search", {"query": "ping"})
    return result.structured_content["index"]  # type: ignore[no-any-return,index]


async def wait_for_index(
    client: Client, condition: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """Search until the index block satisfies ``condition``; that block."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        index = await index_state(client)
        if condition(index):
            return index
        assert time.monotonic() < deadline, f"within {DEADLINE_S:g} s: {what}; last {index}"
        await anyio.sleep(0.05)


def idle(index: dict[str, Any]) -> bool:
    """No pass runs and the model is ready."""
    return not index["indexing"] and index["model"] == "ready"


def complete(index: dict[str, Any]) -> bool:
    """Idle, and every chunk has its vector."""
    return idle(index) and index["chunks_with_vectors"] == index["chunks_total"] > 0
