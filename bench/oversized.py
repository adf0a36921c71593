"""How soon an oversized request is refused, and to which id.

Starts the real server over stdio, sends for each tool (search, reindex, read) a
``tools/call`` whose one argument is ``--mib`` MiB, once with the id before ``params`` (as
the Python SDK writes it) and once after (as the TypeScript SDK does), and prints the id
of the refusal, the time from the line's last byte to the refusal, and the server's peak
resident memory before and after.

    .venv/bin/python -m bench.oversized --data-folder <folder> --mib 10
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ARGUMENT = {"search": "query", "reindex": "path_glob", "read": "path"}


def peak_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-folder", type=Path, required=True)
    parser.add_argument("--mib", type=int, default=10)
    args = parser.parse_args()
    proc = subprocess.Popen(
        [sys.executable, "-m", "micro_rag_mcp", "--data-folder", str(args.data_folder)]
        + ["--title", "bench", "--inst", "bench", "--no-watch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b"}}
        hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
        proc.stdin.write(json.dumps(hello).encode() + b"\n")
        proc.stdin.flush()
        proc.stdout.readline()
        before = peak_mib(proc.pid)
        print("| tool | id | answered id | after the line's end |")
        print("| --- | --- | ---: | ---: |")
        for n, (tool, key) in enumerate(ARGUMENT.items()):
            for last in (False, True):
                rid = 2 * n + int(last) + 1
                params = json.dumps({"name": tool, "arguments": {key: "x" * (args.mib << 20)}})
                call = f'"method": "tools/call", "params": {params}'
                line = (
                    f'{{{call}, "jsonrpc": "2.0", "id": {rid}}}'
                    if last
                    else f'{{"jsonrpc": "2.0", "id": {rid}, {call}}}'
                )
                proc.stdin.write(line.encode() + b"\n")
                proc.stdin.flush()
                sent = time.monotonic()
                answer = json.loads(proc.stdout.readline())
                took = time.monotonic() - sent
                where = "after params" if last else "before params"
                print(f"| {tool} | {rid}, {where} | {answer['id']} | {took * 1000:.1f} ms |")
        print(
            f"\npeak resident memory: {before:.0f} MiB before, {peak_mib(proc.pid):.0f} MiB after"
        )
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
