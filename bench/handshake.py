"""The MCP handshake of our server against a bare ``MCPServer``, side by side.

Each round starts a process, sends ``initialize`` on its stdin and times the answer on
its stdout from the moment the process is started (Python's start, the imports, the
server's set-up: what a client waits for), then kills it. The two servers take turns,
A B A B ..., so both see the same load of a shared machine; the figure is the median
of the ratios of each pair, with the load average beside it.

    .venv/bin/python -m bench.handshake --data-folder <tmp>/hs-docs --rounds 15

``--once ours`` (or ``bare``) times one handshake and prints it, for a timer that runs
whole processes. The data folder is made with a few notes if it does not exist; its
index folder, kept between runs, is what a restart finds (catalog and model graph).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.perf_common import Row

BARE = (
    "from mcp.server import MCPServer\n"
    "server = MCPServer(name='bare', instructions='bare')\n"
    "@server.tool()\n"
    "def echo(text: str) -> str:\n"
    "    return text\n"
    "server.run()\n"
)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


def command(which: str, data: Path) -> list[str]:
    if which == "bare":
        return [sys.executable, "-c", BARE]
    return [sys.executable, "-m", "micro_rag_mcp", "--data-folder", str(data)] + [
        "--title", "bench", "--inst", "bench", "--no-watch", "--model", "minilm",
    ]  # fmt: skip


def handshake_s(which: str, data: Path) -> float:
    """Seconds from starting the server to its answer to ``initialize``."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command(which, data),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - started
        if b'"result"' not in line:
            raise RuntimeError(f"{which}: no answer to initialize: {line[:200]!r}")
        return elapsed
    finally:
        proc.kill()
        proc.wait()


def notes(data: Path) -> Path:
    if not data.is_dir():
        data.mkdir(parents=True)
        for i in range(20):
            (data / f"note{i}.md").write_text(f"# Note {i}\n\nItem{i} is filed under shelf {i}.\n")
    return data


@dataclass(frozen=True, slots=True)
class Side:
    ours: list[float]
    bare: list[float]
    load: tuple[float, float]  # load average before and after

    @property
    def ratios(self) -> list[float]:
        return sorted(a / b for a, b in zip(self.ours, self.bare, strict=True))


def side_by_side(data: Path, rounds: int) -> Side:
    """``rounds`` pairs, ours then bare, after one of each that is not counted (the first
    start makes the index folder and keeps its model graph)."""
    data = notes(data)
    handshake_s("ours", data)
    handshake_s("bare", data)
    ours, bare = [], []
    load = os.getloadavg()[0]
    for _ in range(rounds):
        ours.append(handshake_s("ours", data))
        bare.append(handshake_s("bare", data))
    return Side(ours, bare, (load, os.getloadavg()[0]))


def rows(data: Path, rounds: int, section: str) -> list[Row]:
    """The rows of ``bench.perf``'s indexing section."""
    side = side_by_side(data, rounds)
    ratios = side.ratios
    return [
        Row(
            section,
            "MCP handshake, ours against a bare MCPServer, side by side",
            f"{statistics.median(ratios):.2f}x",
            "",
            f"median of {rounds} pairs ({ratios[0]:.2f}-{ratios[-1]:.2f}); ours "
            f"{statistics.median(side.ours):.2f} s, bare {statistics.median(side.bare):.2f} s; "
            f"load {side.load[0]:.1f}-{side.load[1]:.1f} on {os.cpu_count()} cores",
        )
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-folder", type=Path, required=True)
    p.add_argument("--rounds", type=int, default=15, help="pairs of handshakes (default: 15)")
    p.add_argument("--once", choices=("ours", "bare"), help="one handshake of one server")
    args = p.parse_args(argv)
    data = notes(args.data_folder)
    if args.once:
        print(f"{handshake_s(args.once, data):.3f}")
        return 0
    side = side_by_side(data, args.rounds)
    ratios = side.ratios
    print(
        f"handshake, median of {args.rounds}: ours {statistics.median(side.ours):.3f} s, "
        f"bare MCPServer {statistics.median(side.bare):.3f} s; ratio median "
        f"{statistics.median(ratios):.2f} (min {ratios[0]:.2f}, max {ratios[-1]:.2f}); "
        f"load average {side.load[0]:.1f} -> {side.load[1]:.1f} on {os.cpu_count()} cores"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
