"""Measure how fast an edit becomes searchable, and what a watching server costs idle.

    .venv/bin/python scripts/measure_watch.py --edits 10 --idle 60

Starts the real server (real model, over stdio) on a folder of 40 text files and waits
until it is idle. Then, one at a time, adds a paragraph with a word never seen before to a file, and
times, from the write, how long until ``search`` returns the file for that word, and
until its new chunks have vectors. Last, leaves the connected server alone for
``--idle`` seconds and reads its CPU time from ``/proc/<pid>/stat`` (Linux only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_e2e_stdio import server_params, wait_idle  # noqa: E402
from tests.test_two_processes import write_corpus  # noqa: E402


def server_pid(data: Path) -> int:
    """The server process serving ``data``, found by its command line."""
    wanted = f"--data-folder\0{data}\0".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if wanted in (entry / "cmdline").read_bytes():
                    return int(entry.name)
            except OSError:
                continue
    raise RuntimeError("the server process was not found")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def search(client: Client, query: str) -> dict[str, Any]:
    result = await client.call_tool("search", {"query": query, "top_k": 3})
    return result.structured_content  # type: ignore[return-value]


async def measure(data: Path, edits: int, idle_s: float, watch: bool) -> None:
    async with Client(server_params(data, *([] if watch else ["--no-watch"]))) as client:
        index = await wait_idle(client, timeout=600)
        print(f"indexed {index['files_indexed']} files, {index['chunks_total']} chunks")
        if watch:
            await edit_and_time(client, data, edits)
        pid = server_pid(data)
        before = cpu_seconds(pid)
        await anyio.sleep(idle_s)
        used = cpu_seconds(pid) - before
        print(f"watch: {index['watch']}")
        print(f"idle for {idle_s:g} s: {used:.2f} s of CPU ({100 * used / idle_s:.2f} %)")


async def edit_and_time(client: Client, data: Path, edits: int) -> None:
    found_s: list[float] = []
    embedded_s: list[float] = []
    for i in range(edits):
        word = f"zyx{i}quartz{os.getpid()}"
        target = data / f"report{i:03d}.txt"
        text = target.read_text() + f"\n\nAn edit names the marker {word}.\n"
        started = time.monotonic()
        target.write_text(text)
        while True:
            out = await search(client, word)
            if any(r["path"] == target.name for r in out["results"]):
                found_s.append(time.monotonic() - started)
                break
            await anyio.sleep(0.02)
        while True:
            state = out["index"]
            if not state["indexing"] and state["chunks_with_vectors"] == state["chunks_total"]:
                embedded_s.append(time.monotonic() - started)
                break
            await anyio.sleep(0.02)
            out = await search(client, word)
        print(
            f"edit {i + 1}: searchable after {found_s[-1]:.2f} s, "
            f"embedded after {embedded_s[-1]:.2f} s"
        )
    print(
        f"searchable: median {statistics.median(found_s):.2f} s "
        f"(min {min(found_s):.2f}, max {max(found_s):.2f})"
    )
    print(
        f"embedded:   median {statistics.median(embedded_s):.2f} s "
        f"(min {min(embedded_s):.2f}, max {max(embedded_s):.2f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument(
        "--no-watch", action="store_true", help="only the idle CPU of a server that does not watch"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "docs"
        write_corpus(data, files=40)
        anyio.run(measure, data, args.edits, args.idle, not args.no_watch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
