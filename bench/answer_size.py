"""How many characters a ``search`` answer takes, at several ``top_k``.

Starts the real server over stdio on an indexed folder, sends raw JSON-RPC ``search``
calls (``score_threshold`` 0, so each asks for its full ``top_k``) and counts, per answer,
the characters of its text content, of its other content blocks (resource links, as
JSON), and of its structured content (as compact JSON, as it goes on the wire). Each row
is the largest answer over the queries.

    .venv/bin/python -m bench.answer_size --data-folder <folder> --top-k 5 20 50

Index the folder first (``micro-rag index <folder>``) so that the server finds its index
ready; ``--max-chars`` passes the search's budget (left out: the tool's default).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

QUERIES = (
    "results of the evaluation",
    "table of contents",
    "how to configure the system",
    "the authors conclude",
    "employee leave policy",
)


def call(proc: subprocess.Popen[bytes], request_id: int, method: str, params: Any) -> Any:
    assert proc.stdin is not None and proc.stdout is not None
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    while True:
        answer = json.loads(proc.stdout.readline())
        if answer.get("id") == request_id:
            return answer


def sizes(result: dict[str, Any]) -> tuple[int, int, int]:
    """Characters of the text content, the other content blocks, the structured content."""
    content = result["content"]
    text = sum(len(b["text"]) for b in content if b["type"] == "text")
    other = sum(
        len(json.dumps(b, ensure_ascii=False, separators=(",", ":")))
        for b in content
        if b["type"] != "text"
    )
    structured = result.get("structuredContent")
    packed = 0
    if structured is not None:
        packed = len(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    return text, other, packed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-folder", type=Path, required=True)
    parser.add_argument("--top-k", type=int, nargs="+", default=[5, 20, 50])
    parser.add_argument("--max-chars", type=int, default=None)
    args = parser.parse_args()
    proc = subprocess.Popen(
        [sys.executable, "-m", "micro_rag_mcp", "--data-folder", str(args.data_folder)]
        + ["--title", "bench", "--inst", "bench", "--no-watch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        call(proc, 0, "initialize", init)
        assert proc.stdin is not None
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        print("| top_k | results | text | other blocks | structured | total |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        request_id = 1
        for k in args.top_k:
            worst: tuple[int, int, int, int] = (0, 0, 0, 0)
            for query in QUERIES:
                arguments: dict[str, Any] = {"query": query, "top_k": k, "score_threshold": 0}
                if args.max_chars is not None:
                    arguments["max_chars"] = args.max_chars
                params = {"name": "search", "arguments": arguments}
                answer = call(proc, request_id, "tools/call", params)
                request_id += 1
                result = answer["result"]
                text, other, packed = sizes(result)
                found = len(result["structuredContent"]["results"])
                if text + other + packed > sum(worst[1:]):
                    worst = (found, text, other, packed)
            found, text, other, packed = worst
            total = text + other + packed
            print(f"| {k} | {found} | {text:,} | {other:,} | {packed:,} | {total:,} |")
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
