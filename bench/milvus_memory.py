"""What a milvus-lite server's memory is made of, step by step as one collection grows.

    .venv/bin/python -m bench.milvus_memory --sizes 10000,30000,100000
    .venv/bin/python -m bench.milvus_memory --sizes 10000,30000 --default-allocators

The server runs in this process (milvus-lite's own ``start_server_in_thread``, 16 gRPC
threads as the tests run it), so its objects can be weighed; the folder is
``bench.perf_milvus``'s (synthetic text, hash vectors), indexed by one worker process
through the network client, then searched by another (which builds the indexes milvus-lite
makes at the first search). After each, one JSON line: the process's resident memory
(anonymous and file-backed, from ``/proc``), what holds it (Arrow tables of the loaded
segments, FAISS graphs, BM25 postings), what each allocator holds in use and free (glibc's
``mallinfo2``, CPython's small-object allocator), and the anonymous memory left after
``malloc_trim(0)`` hands glibc's free pages back.

The allocators are set as ``tests.milvuskit.ALLOCATOR_ENV`` sets the server's (the
process starts itself again with them), unless ``--default-allocators``.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from bench import work_folder
from bench.perf_milvus import _subfolder, child, make_folder, queries
from tests.milvuskit import ALLOCATOR_ENV

MIB = 1 << 20
STATUS_KEYS = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem")


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks")
        + ("uordblks", "fordblks", "keepcost")
    ]


def status_mib() -> dict[str, int]:
    """This process's resident memory by kind, from ``/proc/self/status`` (MiB)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in STATUS_KEYS:
            out[key] = int(rest.split()[0]) // 1024
    return out


def glibc_mib(libc: ctypes.CDLL) -> dict[str, int]:
    """glibc's heap: mapped, in use, and free but kept (every arena, ``mallinfo2``)."""
    libc.mallinfo2.restype = MallInfo2
    m = libc.mallinfo2()
    return {
        "heap": (m.arena + m.hblkhd) // MIB,
        "in_use": (m.uordblks + m.hblkhd) // MIB,
        "free": m.fordblks // MIB,
    }


def pymalloc_mib() -> dict[str, int]:
    """CPython's small-object arenas: mapped, in objects, in free blocks (MiB), parsed
    from ``sys._debugmallocstats``, which writes to the C stderr."""
    read, write = os.pipe()
    saved = os.dup(2)
    os.dup2(write, 2)
    try:
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(write)
        os.close(saved)
    with os.fdopen(read, "rb") as f:
        text = f.read().decode(errors="replace")

    def number(label: str) -> int:
        found = re.search(re.escape(label) + r"\s*=?\s*([\d,]+)", text)
        return int(found.group(1).replace(",", "")) if found else -1

    return {
        "arenas": number("# arenas allocated current"),  # 1 MiB each
        "in_objects": number("# bytes in allocated blocks") // MIB,
        "free_blocks": number("# bytes in available blocks") // MIB,
    }


def holders(db: Any) -> dict[str, dict[str, int]]:
    """Per collection: its loaded segments, their rows, Arrow bytes by column, the FAISS
    graphs' serialized size and the BM25 postings (milvus-lite internals, read only)."""
    import faiss

    out = {}
    for (_, name), col in db._collections.items():
        segments = list(col._segment_cache.values())
        columns: dict[str, int] = {}
        for s in segments:
            for field in s.table.schema.names:
                columns[field] = columns.get(field, 0) + s.table.column(field).nbytes
        graphs = [i._index for s in segments for i in s.indexes.values() if hasattr(i, "_index")]
        sparse = [i for s in segments for i in s.sparse_indexes.values()]
        out[name] = {
            "segments": len(segments),
            "rows": sum(s.num_rows for s in segments),
            "arrow_mib": sum(columns.values()) // MIB,
            **{f"arrow_{k}_mib": v // MIB for k, v in columns.items() if v >= MIB},
            "faiss_mib": sum(len(faiss.serialize_index(g)) for g in graphs) // MIB,
            "bm25_postings": sum(len(p) for i in sparse for p in i._posting_lists.values()),
        }
    return out


def report(tag: str, db: Any, libc: ctypes.CDLL) -> None:
    gc.collect()
    record: dict[str, Any] = {
        "step": tag,
        "time": time.strftime("%H:%M:%S"),
        "load": round(os.getloadavg()[0], 1),
        "status_mib": status_mib(),
        "glibc_mib": glibc_mib(libc),
        "pymalloc_mib": pymalloc_mib(),
        "collections": holders(db),
    }
    libc.malloc_trim(0)
    record["anon_after_trim_mib"] = status_mib()["RssAnon"]
    print(json.dumps(record), flush=True)


def run(args: argparse.Namespace) -> None:
    from milvus_lite.adapter.grpc.server import start_server_in_thread

    args.work.mkdir(parents=True, exist_ok=True)
    data = args.work / f"data-{os.getpid()}"
    server, db, port = start_server_in_thread(str(data), port=0, max_workers=16)
    url = f"milvus://127.0.0.1:{port}/default?collection=memory"
    libc = ctypes.CDLL("libc.so.6")
    texts = queries(20)
    report("started", db, libc)
    try:
        for size in (int(n) for n in args.sizes.split(",")):
            make_folder(args.work / "docs", size // 5, 5)
            sub = _subfolder(args.work / "docs", size, 5)
            for kind, extra in (("index", {}), ("search", {"queries": texts})):
                out = child(kind, sub, url, extra).communicate()[0]
                print(json.dumps({"step": f"{size} {kind}", "child": json.loads(out)}))
                report(f"{size} chunks, after {kind}", db, libc)
    finally:
        server.stop(grace=2)
        db.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--work", type=Path, default=work_folder("milvus-memory"))
    p.add_argument("--sizes", default="10000,30000", help="chunk counts (default 10000,30000)")
    p.add_argument(
        "--default-allocators", action="store_true", help="leave the allocators as they are"
    )
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    tuned = all(os.environ.get(k) == v for k, v in ALLOCATOR_ENV.items())
    if not args.default_allocators and not tuned:  # read at start-up: start again with them
        os.execve(
            sys.executable,
            [sys.executable, "-m", "bench.milvus_memory", *argv],
            {**os.environ, **ALLOCATOR_ENV},
        )
    run(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
