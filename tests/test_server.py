"""The MCP tools through the SDK's in-process client, with the fake embedder."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from micro_rag_mcp.fsutil import WriterLock
from micro_rag_mcp.server import build_server
from tests.conftest import make_settings
from tests.fakes import FakeEmbedder


def run(fn: Callable[[Client], Awaitable[Any]], data: Path, **kw: Any) -> Any:
    settings = make_settings(data, instructions=kw.pop("instructions", "Search the docs."))

    async def main() -> Any:
        async with Client(build_server(settings, FakeEmbedder), **kw) as client:
            await wait_idle(client)
            return await fn(client)

    return anyio.run(main)


async def wait_idle(client: Client, timeout: float = 30.0) -> dict[str, Any]:
    """Poll search until the start-up reindex has finished."""
    deadline = time.monotonic() + timeout
    while True:
        result = await client.call_tool("search", {"query": "ping"})
        index = result.structured_content["index"]  # type: ignore[index]
        if not index["indexing"] and index["model"] == "ready":
            return index  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"index never became idle: {index}"
        await anyio.sleep(0.05)


def test_tools_are_listed_with_bounds_output_schema_and_annotations(data: Path) -> None:
    async def check(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"search", "reindex"}
        props = tools["search"].input_schema["properties"]
        assert (props["top_k"]["minimum"], props["top_k"]["maximum"]) == (1, 50)
        assert props["top_k"]["default"] == 5
        assert (props["score_threshold"]["minimum"], props["score_threshold"]["maximum"]) == (0, 1)
        assert tools["search"].input_schema["required"] == ["query"]
        assert "results" in tools["search"].output_schema["properties"]  # type: ignore[index]
        assert tools["search"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert "files_failed" in tools["reindex"].output_schema["properties"]  # type: ignore[index]

    run(check, data)


def test_instructions_are_passed_verbatim(data: Path) -> None:
    inst = "Team Alpha\nRead-only  mode\n\tRefresh: 02:00"

    async def check(client: Client) -> str | None:
        return client.instructions

    assert run(check, data, instructions=inst) == inst


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 51}, "top_k"),
        ({"query": "x", "top_k": "many"}, "top_k"),
        ({"query": "x", "score_threshold": 1.5}, "score_threshold"),
        ({"query": "x", "score_threshold": -0.1}, "score_threshold"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({}, "query"),
    ],
)
def test_bad_search_arguments_get_an_error_naming_the_parameter(
    data: Path, args: dict[str, Any], needle: str
) -> None:
    async def check(client: Client) -> Any:
        return await client.call_tool("search", args)

    result = run(check, data)
    assert result.is_error
    assert needle in result.content[0].text


def test_search_returns_cited_results_and_index_state(data: Path) -> None:
    (data / "zeppelin.md").write_text("# Airships\n\nThe Hindenburg burned at Lakehurst.\n")
    (data / "fruit.txt").write_text("Apples and pears.")

    async def check(client: Client) -> Any:
        return await client.call_tool("search", {"query": "Hindenburg", "score_threshold": 0.0})

    result = run(check, data)
    out = result.structured_content
    top = out["results"][0]
    assert top["path"] == "zeppelin.md" and top["ext"] == ".md"
    assert top["line_start"] == 1 and top["line_end"] == 3
    assert top["section"] == "Airships" and top["locator"] is None
    assert "Hindenburg" in top["snippet"]
    assert out["index"]["files_indexed"] == 2
    assert out["index"]["chunks_total"] == out["index"]["chunks_with_vectors"] == 2


def test_reindex_reports_counts_failures_and_progress(data: Path) -> None:
    (data / "a.txt").write_text("alpha")
    updates: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        updates.append((done, total, message))

    async def check(client: Client) -> Any:
        (data / "b.txt").write_text("beta")
        (data / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
        return await client.call_tool("reindex", {}, progress_callback=progress)

    out = run(check, data).structured_content
    assert (out["files_added"], out["files_unchanged"]) == (1, 1)
    assert [f["path"] for f in out["files_failed"]] == ["broken.pdf"]
    assert out["chunks_total"] == 2
    assert updates, "no progress notification"
    values = [u[0] for u in updates]
    assert values == sorted(values)
    assert updates[-1][0] == updates[-1][1]


def test_reindex_refuses_a_glob_leaving_the_folder(data: Path) -> None:
    async def check(client: Client) -> Any:
        return await client.call_tool("reindex", {"path_glob": "../*"})

    result = run(check, data)
    assert result.is_error and "leave the data folder" in result.content[0].text


def test_reindex_while_another_process_holds_the_lock_is_busy(data: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(data / "index" / "index.lock")],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"

        async def check(client: Client) -> Any:
            return await client.call_tool("reindex", {})

        settings = make_settings(data)

        async def main() -> Any:
            async with Client(build_server(settings, FakeEmbedder)) as client:
                return await check(client)

        result = anyio.run(main)
    finally:
        holder.kill()
        holder.wait()
    assert result.is_error
    text = result.content[0].text
    assert "already running" in text and "reading 3/7" in text
    # The kernel released the killed holder's lock: the next reindex runs.
    lock = WriterLock(data / "index" / "index.lock")
    lock.acquire()
    lock.release()


HOLD_LOCK = """
import json, os, sys, time
from pathlib import Path
from micro_rag_mcp.fsutil import WriterLock
path = Path(sys.argv[1]); path.parent.mkdir(parents=True, exist_ok=True)
lock = WriterLock(path); lock.acquire()
lock.report({"pid": os.getpid(), "phase": "reading", "done": 3, "total": 7})
print("locked", flush=True)
time.sleep(60)
"""
