"""Two server processes on one folder (two client windows), over stdio, real model."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from micro_rag_mcp.core.fsutil import lock_is_held, read_progress
from tests.mcpkit import stdio_params, wait_complete
from tests.waiting import until

# About the server's own process (its log, its signals, two side by side): standalone.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("standalone")]

TOPICS = ["volcano", "glacier", "desert", "rainforest", "coral", "tundra", "savanna", "canyon"]


def write_corpus(data: Path, files: int) -> None:
    data.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        topic = TOPICS[i % len(TOPICS)]
        paragraphs = [
            f"Report {i} on the {topic}. Paragraph {p}: field notes describe the {topic} "
            f"landscape, its climate, its animals and the people who study it in season {p}."
            for p in range(12)
        ]
        (data / f"report{i:03d}.txt").write_text("\n\n".join(paragraphs))


async def state(client: Client) -> dict[str, Any]:
    result = await client.call_tool("search", {"query": "volcano field notes"})
    assert not result.is_error, result.content
    return result.structured_content["index"]  # type: ignore[index,no-any-return]


async def indexing(client: Client) -> bool:
    return bool((await state(client))["indexing"])


def test_second_process_searches_during_reindex_and_takes_over_after_a_kill(
    tmp_path: Path,
) -> None:
    data = tmp_path / "docs"
    write_corpus(data, files=40)
    lock = data / "index" / "index.lock"

    async def main() -> None:
        async with Client(stdio_params(data)) as writer:
            await until(lambda: indexing(writer), "the writer indexes", 60, interval=0.05)
            async with Client(stdio_params(data), mode="legacy") as reader:
                seen: list[int] = []
                while True:  # the reader searches while the writer commits
                    s = await state(reader)
                    assert s["indexing"], f"the writer finished too soon to test: {s}"
                    seen.append(s["files_indexed"])
                    if s["files_indexed"] == 40:
                        break
                    await anyio.sleep(0.02)
                assert seen == sorted(seen), "the reader saw the index go backwards"

                os.kill(await writer_pid(lock), signal.SIGKILL)  # its window is closed hard
                # Until the kernel has ended the process.
                await until(lambda: not lock_is_held(lock), "a killed writer let its lock go", 60)

                report = await reader.call_tool("reindex", {})  # the lock is free
                assert not report.is_error, report.content
                final = await wait_complete(reader)
                assert final["files_indexed"] == 40
                assert final["chunks_with_vectors"] == final["chunks_total"] > 0
                hits = await reader.call_tool("search", {"query": "coral report", "top_k": 3})
                paths = [r["path"] for r in hits.structured_content["results"]]  # type: ignore[index]
                assert paths and all(p.startswith("report") for p in paths)

    try:
        anyio.run(main)
    except BaseException as e:  # the killed writer's client may report a broken pipe
        if not _only_broken_pipes(e):
            raise


async def writer_pid(lock: Path) -> int:
    """The pid the running writer wrote in its lock's record."""
    pids: list[int] = []

    def recorded() -> bool:
        record = read_progress(lock)
        pids[:] = [] if record is None or record.pid is None else [record.pid]
        return bool(pids)

    await until(recorded, f"a readable record in {lock}", 60)
    return pids[0]


def _only_broken_pipes(e: BaseException) -> bool:
    if isinstance(e, BaseExceptionGroup):
        return all(_only_broken_pipes(x) for x in e.exceptions)
    return isinstance(e, (BrokenPipeError, ConnectionError, anyio.ClosedResourceError))
