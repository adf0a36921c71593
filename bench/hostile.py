"""Hostile inputs against the readers, a reindex and the tools: time, peak memory, outcome.

    .venv/bin/python bench/hostile.py [--read-only] [--only NAME]
    .venv/bin/python bench/hostile.py --stdio       # a client that floods, one that never reads

Each input is built (tests/hostilefactory.py) in a fresh temporary folder and run in a
fresh child process, so each peak is its own: the child reads the file through the
reader process (its peak is ``ru_maxrss`` of the waited-for reader, ``RUSAGE_CHILDREN``),
then, unless ``--read-only``, runs a whole reindex with the fake embedder (the child's
own ``ru_maxrss`` is the server's peak). An oversized argument is one tool call to a
server in the child, through the SDK's in-process client. ``--read-only`` is for a
checkout whose reindex of these files would run for an hour
(``PYTHONPATH=/path/to/old/src``); it leaves the calls out. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hostilefactory import (  # noqa: E402
    make_div_flood_html,
    make_repeated_spine_epub,
    make_shared_stream_pdf,
    make_shared_string_xlsx,
)

INPUTS: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "epub-spine": (
        "EPUB, spine names one 100 KB chapter 5,000 times",
        lambda d: make_repeated_spine_epub(d / "echo.epub", repeats=5000, chapter_chars=100_000),
    ),
    "xlsx-shared": (
        "XLSX, 300k cells share one 10k-character string",
        lambda d: make_shared_string_xlsx(
            d / "echo.xlsx", rows=3000, columns=100, string_chars=10_000
        ),
    ),
    "pdf-stream": (
        "PDF, 2,000 pages draw one content stream",
        lambda d: make_shared_stream_pdf(d / "echo.pdf", pages=2000, lines=150),
    ),
    "html-div": (
        "HTML, `<div/>` × 100,000",
        lambda d: make_div_flood_html(d / "flood.html", divs=100_000),
    ),
}

MIB = 1024 * 1024

# Tool calls with one 50 MB string argument.
CALLS: dict[str, tuple[str, str, str]] = {
    "query-50mb": ("`search` with a 50 MB `query`", "search", "query"),
    "glob-50mb": ("`reindex` with a 50 MB `path_glob`", "reindex", "path_glob"),
    "path-50mb": ("`read` with a 50 MB `path`", "read", "path"),
}


def _peak(who: int) -> int:
    return resource.getrusage(who).ru_maxrss * 1024  # Linux: KiB


def run_one(path: Path, read_only: bool) -> dict[str, object]:
    """In the child: read ``path`` in a reader process, then (maybe) reindex its folder."""
    from micro_rag_mcp.core.errors import ReadError
    from micro_rag_mcp.ingest.isolation import IsolatedReader

    folder = path.parent
    started = time.monotonic()
    with IsolatedReader(folder, timeout_s=600) as reader:
        try:
            read = f"{len(reader.read(path, max_bytes=100 * MIB).text):,} characters"
        except ReadError as e:
            read = str(e)
    result: dict[str, object] = {
        "read_s": time.monotonic() - started,
        "reader_peak": _peak(resource.RUSAGE_CHILDREN),
        "read": read,
    }
    if read_only:
        return result
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.local.engine import Engine
    from tests.fakes import FakeEmbedder

    settings = Settings(data_folder=folder, index_folder=folder / "index", watch="off")
    engine = Engine(settings, FakeEmbedder)
    engine.load_model()
    started = time.monotonic()
    report = engine.reindex()
    result["reindex_s"] = time.monotonic() - started
    result["server_peak"] = _peak(resource.RUSAGE_SELF)
    failed = dict(report.files_failed)
    result["recorded"] = failed.get(path.name) or f"indexed, {report.chunks_total:,} chunks"
    engine.stop()
    return result


def run_call(folder: Path, tool: str, argument: str) -> dict[str, object]:
    """In the child: one call with a 50 MB ``argument`` to a server on ``folder``."""
    import anyio
    from mcp import Client

    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.serve.server import build_server
    from tests.fakes import FakeEmbedder

    (folder / "note.txt").write_text("herons argue about tea")
    settings = Settings(data_folder=folder, index_folder=folder / "index", watch="off")
    server = build_server(settings, FakeEmbedder)
    result: dict[str, object] = {}

    async def call() -> None:
        async with Client(server) as client:
            value = "a" * (50 * MIB)
            started = time.monotonic()
            answer = await client.call_tool(tool, {argument: value})
            result["read_s"] = time.monotonic() - started
            text = answer.content[0].text  # type: ignore[union-attr]
            result["recorded"] = text if answer.is_error else f"answered ({len(text):,} chars)"

    anyio.run(call)
    result["server_peak"] = _peak(resource.RUSAGE_SELF)
    return result


def stdio_rows() -> None:
    """A real server over stdio (real model): a flood of searches, and a client that
    sends 300 searches, never reads, and closes stdin."""
    import threading

    from tests.stdiokit import RawServer, search_call

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        for i in range(60):
            ps = [f"Heron survey {i}.{p}: the herons nested by the reeds. " * 12 for p in range(3)]
            (data / f"survey{i:02d}.txt").write_text("\n\n".join(ps))
        print("| client | server RSS before | after | outcome |")
        print("| --- | ---: | ---: | --- |")
        server = RawServer(data)
        try:
            server.wait_searchable("herons", idle=True)
            before = server.rss_bytes()
            taken = [0]

            def send(n: int, close: bool) -> None:
                try:
                    for i in range(n):
                        server.send(search_call(i, "herons nested reeds"))
                        taken[0] += 1
                    if close and server.proc.stdin is not None:
                        server.proc.stdin.close()
                except (OSError, ValueError):
                    pass

            threading.Thread(target=send, args=(3000, False), daemon=True).start()
            time.sleep(40)  # the client reads nothing for 40 s
            print(
                f"| 3,000 searches (`top_k` 50), none read for 40 s | {before / MIB:.0f} MB | "
                f"{server.rss_bytes() / MIB:.0f} MB | {taken[0]:,} requests taken |",
                flush=True,
            )
        finally:
            server.kill()
        server = RawServer(data)
        try:
            server.wait_searchable("herons")
            before = server.rss_bytes()
            taken[0] = 0
            threading.Thread(target=send, args=(300, True), daemon=True).start()
            started = time.monotonic()
            code = server.exited_within(120)
            outcome = (
                f"exit {code} {time.monotonic() - started:.1f} s after the last request"
                if code is not None
                else "still running after 120 s"
            )
            print(
                f"| 300 searches, none read, stdin closed | {before / MIB:.0f} MB | – | {outcome} |"
            )
        finally:
            server.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--read-only", action="store_true", help="only read, no reindex")
    parser.add_argument("--only", choices=sorted({*INPUTS, *CALLS}), help="run one input")
    parser.add_argument("--stdio", action="store_true", help="the stdio clients only")
    parser.add_argument("--child", nargs=2, metavar=("NAME", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stdio:
        stdio_rows()
        return
    if args.child:
        name, folder = args.child
        if name in CALLS:
            print(json.dumps(run_call(Path(folder), *CALLS[name][1:])))
            return
        path = INPUTS[name][1](Path(folder))
        print(json.dumps(run_one(path, args.read_only)))
        return
    print("| input | size | read or call | reader peak | reindex | server peak | recorded |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    names = [args.only] if args.only else [*INPUTS, *([] if args.read_only else CALLS)]
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            command = [sys.executable, __file__, "--child", name, tmp]
            out = subprocess.run(
                command + (["--read-only"] if args.read_only else []),
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            files = [p for p in Path(tmp).iterdir() if p.is_file()]
            size = 50 * MIB if name in CALLS else files[0].stat().st_size
        r = json.loads(out.splitlines()[-1])
        what = (CALLS[name] if name in CALLS else INPUTS[name])[0]
        reindex = f"{r['reindex_s']:.1f} s" if "reindex_s" in r else "–"
        server = f"{r['server_peak'] / MIB:.0f} MB" if "server_peak" in r else "–"
        reader = f"{r['reader_peak'] / MIB:.0f} MB" if "reader_peak" in r else "–"
        recorded = r.get("recorded", r.get("read"))
        print(
            f"| {what} | {size:,} B | {r['read_s']:.1f} s | {reader} | {reindex} | {server} "
            f"| {recorded} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
