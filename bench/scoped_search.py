"""Scoped search latency at 100k chunks, and whether a scope still fills ``top_k``.

    .venv/bin/python -m bench.scoped_search --work <work>/scope-work [--size 100000] [--queries 200]

The folder is ``bench.perf_search``'s synthetic one (files of ten chunks, clustered
vectors; built once under ``--work``). Each file's modification time is set to a day of
its own (file ``i`` on day ``i`` of 2000), so a date range takes a known share of files.
Every search goes through ``Engine.search`` with ``top_k`` 10, exact and approximate
(the graph: the server's mode from 20k chunks), and reports p50 / p95 wall time, the
p50 of the process's CPU time (all its threads: what other processes' load inflates
least), and whether every result lay in the scope and all 10 came back.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from bench.perf_search import NEVER, _engine, build_folder, query_set
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.layout import IndexPaths
from micro_rag_mcp.search.scope import SearchScope, parse_scope

DAY_NS = 86_400 * 10**9
Y2000_NS = 946_684_800 * 10**9


def _dated(folder: Path) -> None:
    """File ``i`` modified on day ``i`` after 2000-01-01 (once)."""
    catalog = Catalog.open(IndexPaths(folder / "docs" / "index").catalog)
    try:
        if catalog.get_meta("bench_dated") == "1":
            return
        with catalog.transaction() as conn:
            conn.execute(
                "UPDATE files SET mtime_ns = ? + (CAST(substr(path, 2, 7) AS INTEGER) * ?)",
                (Y2000_NS, DAY_NS),
            )
            conn.execute("INSERT INTO meta(key, value) VALUES ('bench_dated', '1')")
    finally:
        catalog.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    folder = build_folder(args.work, args.size)
    _dated(folder)
    files = args.size // 10
    scopes: list[tuple[str, SearchScope | None, int]] = [
        ("no scope", None, files),
        ("path_glob f00000* (1% of files)", parse_scope(path_glob="f00000*"), files // 100),
        ("path_glob f0000*, f0001* (20%)", parse_scope(path_glob=["f0000*", "f0001*"]), files // 5),
        (
            "modified 2000-01-01 .. +half the days (50%)",
            parse_scope(
                modified_after="2000-01-01",
                modified_before=time.strftime(
                    "%Y-%m-%d", time.gmtime(946_684_800 + 86_400 * files // 2)
                ),
            ),
            files // 2,
        ),
        ("file_types txt (100%)", parse_scope(file_types=["txt"]), files),
    ]
    table = query_set(args.queries)
    queries = list(table)
    for kind, approximate_from in (("exact", NEVER), ("approximate", 1)):
        engine = _engine(folder, table, approximate_from=approximate_from)
        try:
            for label, scope, in_scope in scopes:
                for q in queries[:5]:
                    engine.search(q, 10, 0.0, scope)
                times, cpu, full, inside = [], [], 0, 0
                for q in queries:
                    started, cpu_started = time.perf_counter(), time.process_time()
                    hits = engine.search(q, 10, 0.0, scope).hits
                    times.append(time.perf_counter() - started)
                    cpu.append(time.process_time() - cpu_started)
                    full += len(hits) == 10
                    inside += all(
                        scope is None or scope.matches(h.chunk.path, h.chunk.ext, h.chunk.mtime_ns)
                        for h in hits
                    )
                p50 = statistics.median(times) * 1000
                p95 = sorted(times)[int(0.95 * len(times)) - 1] * 1000
                cpu50 = statistics.median(cpu) * 1000
                print(
                    f"{kind:11} | {label:45} | ~{in_scope * 10:>6} chunks | p50 {p50:5.1f} ms | "
                    f"p95 {p95:5.1f} ms | CPU p50 {cpu50:5.1f} ms | top 10 full "
                    f"{full}/{len(queries)} | in scope {inside}/{len(queries)}",
                    flush=True,
                )
        finally:
            engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
