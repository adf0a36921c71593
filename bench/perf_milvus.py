"""The Milvus store at a size this machine affords: ingest with 1, 2 and 4 workers, search
latency with 1 and 8 clients, and the memory of a search-only server.

    .venv/bin/python -m bench.perf_milvus
    .venv/bin/python -m bench.perf --sections milvus      # the same, as a section of bench.perf

Synthetic and labelled so: the folder holds generated text files (``--milvus-chunks``
chunks each, words drawn from a fixed vocabulary) and the vectors come from a hashing
embedder of the real model's width (384), so the numbers are the store's and the
pipeline's (read, chunk, write, search, fuse), not the model's: the real encoder embeds
~40 chunks/s on two cores and bounds a real worker's rate. A milvus-lite gRPC server is
started for the run (``--milvus-url`` points at another Milvus instead). The same folder
in the embedded store (SQLite + FAISS) is the reference for search and memory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from bench import work_folder
from bench.perf_common import Row, percentiles_ms, print_table

REPO = Path(__file__).resolve().parent.parent
SECTION = "milvus"
WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "pu", "ra", "si", "to") for b in range(60)]
QUERIES = 200
SYNTHETIC = "synthetic text and vectors"

# A worker or a search server, in its own process: argv = kind, folder, url, extra JSON.
CHILD = """
import json, resource, sys, time
from pathlib import Path
from bench.perf_milvus import HashEmbedder, engine_for
kind, folder, url, extra = sys.argv[1], Path(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
engine = engine_for(folder, url or None, extra.get("shard"))
engine.load_model()
if kind == "index":
    started = time.perf_counter()
    report = engine.reindex()
    out = {"seconds": time.perf_counter() - started, "files": report.files_added,
           "chunks": report.chunks_embedded}
else:
    for q in extra["queries"]:
        engine.search(q, 5)
    rss = max(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
    out = {"peak_rss_kib": rss}
print(json.dumps(out), flush=True)
"""


class HashEmbedder:
    """Unit vectors of the real model's width from a hash of the text: costless, stable."""

    model_id = "bench-hash-384"
    dimension = 384

    def embed_documents(self, texts: Sequence[str]) -> object:
        import numpy as np

        return np.stack([self.embed_query(t) for t in texts]) if texts else np.zeros((0, 384))

    def embed_query(self, text: str) -> object:
        import numpy as np

        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        return v / np.linalg.norm(v)


def engine_for(folder: Path, url: str | None, shard: Sequence[int] | None = None) -> object:
    """The store ``url`` names (None: the embedded index) over ``folder``, hash vectors."""
    from dataclasses import replace

    from micro_rag_mcp.engine import Engine
    from micro_rag_mcp.milvus_engine import MilvusEngine
    from micro_rag_mcp.settings import Settings
    from micro_rag_mcp.store import parse_store_url

    settings = Settings(data_folder=folder, index_folder=folder.parent / "index", watch="off")
    if url is None:
        return Engine(settings, HashEmbedder)  # type: ignore[arg-type]
    config = parse_store_url(url)
    if shard is not None:
        config = replace(config, shard=(int(shard[0]), int(shard[1])))
    return MilvusEngine(settings, HashEmbedder, config, folder=folder)  # type: ignore[arg-type]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--milvus-files", type=int, default=600, help="synthetic files (default 600)")
    p.add_argument("--milvus-chunks", type=int, default=5, help="chunks per file (default 5)")
    p.add_argument("--milvus-workers", default="1,2,4", help="worker counts (default 1,2,4)")
    p.add_argument("--milvus-url", help="an existing Milvus (default: start milvus-lite)")


def make_folder(folder: Path, files: int, chunks: int) -> int:
    """Generated text files of about ``chunks`` chunks each (1000-character chunks)."""
    rng = random.Random(7)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        path = folder / f"d{i // 500:03d}" / f"f{i:06d}.txt"
        if path.exists():
            continue
        path.parent.mkdir(exist_ok=True)
        paragraphs = [" ".join(rng.choices(WORDS, k=110)) for _ in range(chunks)]
        path.write_text("\n\n".join(paragraphs))
        os.utime(path, ns=(10**18, 10**18))
    return files * chunks


def child(kind: str, folder: Path, url: str, extra: dict[str, object]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, kind, str(folder), url, json.dumps(extra)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def ingest(folder: Path, base_url: str, workers: int) -> tuple[float, int, str]:
    """Index the folder into a new collection with ``workers`` processes: wall seconds,
    chunks, and the collection's URL."""
    url = base_url.replace("collection=", f"collection=w{workers}_{uuid.uuid4().hex[:6]}_")
    started = time.perf_counter()
    procs = [child("index", folder, url, {"shard": [i, workers]}) for i in range(1, workers + 1)]
    outs = [json.loads(p.communicate()[0]) for p in procs]
    return time.perf_counter() - started, sum(int(o["chunks"]) for o in outs), url


def latencies(engine: object, queries: list[str], clients: int) -> list[float]:
    """Each search's duration, ``clients`` threads searching at once."""
    durations: list[float] = []
    lock = threading.Lock()

    def run(part: list[str]) -> None:
        for q in part:
            t = time.perf_counter()
            engine.search(q, 5)  # type: ignore[attr-defined]
            with lock:
                durations.append(time.perf_counter() - t)

    threads = [threading.Thread(target=run, args=(queries[i::clients],)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return durations


def start_server(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    from tests.milvuskit import MilvusServer

    server = MilvusServer(work)
    server.start()
    assert server.proc is not None
    return server.proc, f"milvus://127.0.0.1:{server.port}/default?collection=bench"


def run(args: argparse.Namespace) -> list[Row]:
    work: Path = args.work / "milvus"
    folder = work / "docs"
    files = min(args.milvus_files, 100) if getattr(args, "quick", False) else args.milvus_files
    chunks = make_folder(folder, files, args.milvus_chunks)
    size = f"{files} files, {chunks} chunks"
    proc, url = (None, args.milvus_url) if args.milvus_url else start_server(work)
    rows: list[Row] = []
    try:
        stores: dict[str, str | None] = {}
        for n in (int(n) for n in args.milvus_workers.split(",")):
            seconds, stored, made = ingest(folder, url, n)
            stores.setdefault("milvus", made)
            rows.append(
                Row(SECTION, f"ingest, {n} worker{'s' * (n > 1)}, {size}",
                    f"{stored / seconds:.0f} chunks/s", "", SYNTHETIC)
            )  # fmt: skip
        stores["embedded"] = None
        rng = random.Random(11)
        queries = [" ".join(rng.choices(WORDS, k=4)) for _ in range(QUERIES)]
        for name, store_url in stores.items():
            rows.extend(_searches(folder, name, store_url, queries, size))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
    return rows


def _searches(folder: Path, name: str, url: str | None, queries: list[str], size: str) -> list[Row]:
    """Search latency with 1 and 8 clients, and a search-only process's peak memory."""
    rows: list[Row] = []
    engine = engine_for(folder, url)
    if url is None:  # the embedded index of the same folder, built here
        engine.reindex()  # type: ignore[attr-defined]
    engine.load_model()  # type: ignore[attr-defined]
    engine.search("warm up", 5)  # type: ignore[attr-defined]
    for clients in (1, 8):
        p50, p99 = percentiles_ms(latencies(engine, queries, clients))
        rows.append(
            Row(SECTION, f"search p50 / p99, {clients} client{'s' * (clients > 1)}, {name}, "
                f"{size}", f"{p50:.1f} / {p99:.1f} ms", "", SYNTHETIC)
        )  # fmt: skip
    engine.stop()  # type: ignore[attr-defined]
    out = child("search", folder, url or "", {"queries": queries[:50]}).communicate()[0]
    peak = json.loads(out)["peak_rss_kib"]
    rows.append(
        Row(SECTION, f"search-only process, peak memory, {name}, {size}",
            f"{peak / 1024:.0f} MiB", "", f"{SYNTHETIC}; no model loaded")
    )  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--work", type=Path, default=work_folder("perf"), help="scratch folder")
    add_arguments(p)
    args = p.parse_args(argv)
    rows = run(args)
    print_table(rows)
    print(f"load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
