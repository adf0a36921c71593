"""The Milvus store at sizes this machine affords: an ingest and search curve as one
collection grows, ingest with 1, 2 and 4 workers, and the memory of a search-only process
and of the Milvus server.

    .venv/bin/python -m bench.perf_milvus                 # 3,000 and 10,000 chunks
    .venv/bin/python -m bench.perf_milvus --milvus-sizes 30000,100000,300000,1000000 \
        --milvus-workers-size 30000 --milvus-embedded-max 100000
    .venv/bin/python -m bench.perf --sections milvus      # the default, as a section of bench.perf

The curve stops before a size whose projected memory (the server's anonymous memory per
chunk so far, times the next size, and its peak over it) would take the machine past
``--milvus-max-used-gib``, and a watchdog stops the server if the machine gets there
anyway: the table then ends at the last size measured, and says why.

Synthetic and labelled so: the folder holds generated text files (``--milvus-chunks``
chunks of ~1,000 characters each) whose words follow Zipf's law over a 30,000-word
vocabulary, as a language's do (a query's rarer words then match few chunks, as real
ones do), and the vectors come from a hashing embedder of the real model's width (384),
so the numbers are the store's and the pipeline's (read, chunk, stem, write, search,
fuse), not the model's: the real encoder embeds ~40 chunks/s on two cores and bounds a
real worker's rate. A milvus-lite gRPC server is started for the run (``--milvus-url``
points at another Milvus instead). The curve grows one collection: each size adds files
and is indexed by one worker (only the new files are written), then searched. The same
folder in the embedded store (SQLite + FAISS) is the reference up to
``--milvus-embedded-max`` chunks.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
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
VOCABULARY = 30_000
WORDS_PER_CHUNK = 85  # ~800 characters: a 1000/200 chunk's stride, one chunk a paragraph
QUERIES = 200
SYNTHETIC = "synthetic text and vectors"
GIB = 1 << 30
WATCH_S = 2.0  # how often the watchdog reads the machine's memory

# A worker or a search server, in its own process: argv = kind, folder, url, extra JSON.
CHILD = """
import json, sys, time
from pathlib import Path
from bench.perf_milvus import engine_for, memory
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
    out = memory("self")
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

    from micro_rag_mcp.core.address import parse_store_url
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.local.engine import Engine
    from micro_rag_mcp.milvus.engine import MilvusEngine

    settings = Settings(data_folder=folder, index_folder=folder.parent / "index", watch="off")
    if url is None:
        return Engine(settings, HashEmbedder)  # type: ignore[arg-type]
    config = parse_store_url(url)
    if shard is not None:
        config = replace(config, shard=(int(shard[0]), int(shard[1])))
    return MilvusEngine(settings, HashEmbedder, config, folder=folder)  # type: ignore[arg-type]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--milvus-sizes",
        default="3000,10000",
        help="chunk counts of the curve, one collection growing (default 3000,10000)",
    )
    p.add_argument("--milvus-chunks", type=int, default=5, help="chunks per file (default 5)")
    p.add_argument("--milvus-workers", default="1,2,4", help="worker counts (default 1,2,4)")
    p.add_argument(
        "--milvus-workers-size",
        type=int,
        help="chunks each worker-count run ingests, into a new collection (default: the "
        "first size)",
    )
    p.add_argument(
        "--milvus-embedded-max",
        type=int,
        default=100_000,
        help="measure the embedded store too up to this many chunks (default 100000)",
    )
    p.add_argument(
        "--milvus-queries", type=int, default=QUERIES, help=f"searches per measure ({QUERIES})"
    )
    p.add_argument("--milvus-url", help="an existing Milvus (default: start milvus-lite)")
    p.add_argument(
        "--milvus-curve-workers",
        type=int,
        default=1,
        help="worker processes that ingest each step of the curve (default 1)",
    )
    p.add_argument(
        "--milvus-max-used-gib",
        type=float,
        default=20.0,
        help="stop the curve before the machine's used memory would pass this (default 20)",
    )


def vocabulary() -> list[str]:
    """Pseudo-words of 2 to 5 syllables, the same on every run."""
    import numpy as np

    rng = np.random.default_rng(5)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    lengths = rng.integers(2, 6, VOCABULARY)
    return sorted({"".join(rng.choice(syllables, n)) for n in lengths})


def zipf_weights(n: int) -> object:
    import numpy as np

    w = 1.0 / np.arange(1, n + 1)
    return w / w.sum()


def make_folder(folder: Path, files: int, chunks: int) -> int:
    """Generated text files of ``chunks`` ~1,000-character paragraphs each, words drawn
    by Zipf's law; files already there are kept (a folder grows from size to size)."""
    import numpy as np

    words = np.asarray(vocabulary())
    weights = zipf_weights(len(words))
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        path = folder / f"d{i // 500:04d}" / f"f{i:07d}.txt"
        if path.exists():
            continue
        path.parent.mkdir(exist_ok=True)
        rng = np.random.default_rng(i)  # a file's text depends on its number alone
        drawn = words[rng.choice(len(words), (chunks, WORDS_PER_CHUNK), p=weights)]
        path.write_text("\n\n".join(" ".join(row) for row in drawn))
        os.utime(path, ns=(10**18, 10**18))
    return files * chunks


def queries(n: int = QUERIES) -> list[str]:
    """Three words each, drawn as the text's are: mostly common, some rare."""
    import numpy as np

    words = np.asarray(vocabulary())
    rng = np.random.default_rng(11)
    drawn = words[rng.choice(len(words), (n, 3), p=zipf_weights(len(words)))]
    return [" ".join(row) for row in drawn]


def memory(pid: str | int) -> dict[str, int]:
    """A process's peak and current resident memory, its anonymous part (what the kernel
    cannot drop and read again from a file) and its proportional share (KiB)."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    names = (("peak_rss_kib", "VmHWM:"), ("rss_kib", "VmRSS:"), ("anon_kib", "RssAnon:"))
    out = {
        key: int(line.split()[1]) for line in status for key, name in names if line.startswith(name)
    }
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            out["pss_kib"] = int(line.split()[1])
    return out


def used_bytes() -> int:
    """The machine's memory in use: total less what the kernel could give a process."""
    info = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, _, rest = line.partition(":")
        info[name] = int(rest.split()[0]) * 1024
    return info["MemTotal"] - info["MemAvailable"]


class MemoryGuard:
    """Stops the milvus-lite server (our own child) if the machine's used memory passes
    ``limit`` bytes, before the kernel's out-of-memory killer picks a process of the
    machine's other users."""

    def __init__(self, server: subprocess.Popen[bytes], limit: float) -> None:
        self.server = server
        self.limit = limit
        self.tripped = ""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(WATCH_S):
            used = used_bytes()
            if used > self.limit and self.server.poll() is None:
                self.tripped = f"the machine used {used / GIB:.1f} GiB: server stopped"
                _log(self.tripped)
                self.server.terminate()
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def child(kind: str, folder: Path, url: str, extra: dict[str, object]) -> subprocess.Popen[str]:
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, kind, str(folder), url, json.dumps(extra)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def ingest(folder: Path, url: str, workers: int) -> tuple[float, int]:
    """Index the folder into the collection ``url`` names with ``workers`` processes:
    wall seconds and chunks written."""
    started = time.perf_counter()
    procs = [child("index", folder, url, {"shard": [i, workers]}) for i in range(1, workers + 1)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError(f"a worker failed indexing {folder}")
    return time.perf_counter() - started, sum(int(json.loads(o)["chunks"]) for o in outs)


def fresh(base_url: str, name: str) -> str:
    return base_url.replace("collection=", f"collection={name}_{uuid.uuid4().hex[:6]}_")


def latencies(engine: object, texts: list[str], clients: int) -> list[float]:
    """Each search's duration, ``clients`` threads searching at once."""
    durations: list[float] = []
    lock = threading.Lock()

    def run(part: list[str]) -> None:
        for q in part:
            t = time.perf_counter()
            engine.search(q, 5)  # type: ignore[attr-defined]
            with lock:
                durations.append(time.perf_counter() - t)

    threads = [threading.Thread(target=run, args=(texts[i::clients],)) for i in range(clients)]
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
    work.mkdir(parents=True, exist_ok=True)
    folder = work / "docs"
    sizes = [int(n) for n in args.milvus_sizes.split(",")]
    if getattr(args, "quick", False):
        sizes = sizes[:1]
    proc, url = (None, args.milvus_url) if args.milvus_url else start_server(work)
    guard = None if proc is None else MemoryGuard(proc, args.milvus_max_used_gib * GIB)
    rows: list[Row] = []
    try:
        rows.extend(_workers(args, folder, url, args.milvus_workers_size or sizes[0]))
        rows.extend(_curve(args, folder, url, sizes, proc, guard))
    finally:
        if guard is not None:
            guard.stop()
        if proc is not None:
            proc.terminate()
            proc.wait()
    return rows


def _workers(args: argparse.Namespace, folder: Path, url: str, size: int) -> list[Row]:
    """Ingest ``size`` chunks into a new collection with each worker count."""
    from micro_rag_mcp.core.address import parse_store_url
    from micro_rag_mcp.core.errors import StoreUnavailable
    from micro_rag_mcp.milvus.index import MilvusIndex

    per_file = args.milvus_chunks
    make_folder(folder, -(-size // per_file), per_file)
    sub = _subfolder(folder, size, per_file)
    rows = []
    for n in (int(n) for n in args.milvus_workers.split(",")):
        made = fresh(url, f"w{n}")
        seconds, stored = ingest(sub, made, n)
        _log(f"{n} workers: {stored} chunks in {seconds:.1f} s")
        rows.append(
            Row(SECTION, f"ingest, {n} worker process{'es' * (n > 1)}, {stored:,} chunks",
                f"{stored / seconds:.0f} chunks/s", "", f"{SYNTHETIC}; {_load()}")
        )  # fmt: skip
        _log(f"{rows[-1].measure}: {rows[-1].value} ({rows[-1].note})")
        try:
            MilvusIndex(
                parse_store_url(made)
            ).collections.drop()  # the curve's collection is another
        except StoreUnavailable as e:  # then the server's memory includes it: said below
            _log(f"could not drop {made}: {e}")
    return rows


def _curve(
    args: argparse.Namespace,
    folder: Path,
    url: str,
    sizes: list[int],
    server: subprocess.Popen[bytes] | None,
    guard: MemoryGuard | None,
) -> list[Row]:
    """One collection grown size by size: the increment's ingest rate, then search
    latency and memory at that size, on the store and (up to a size) the embedded one;
    it stops at the first size the machine's memory would not hold."""
    made = fresh(url, "curve")
    texts = queries(args.milvus_queries)
    rows: list[Row] = []
    total = 0
    for size in sizes:
        if server is not None and (why := _too_big(server, total, size, args)):
            rows.append(Row(SECTION, f"curve stopped before {size:,} chunks", why, "", SYNTHETIC))
            _log(f"{rows[-1].measure}: {why}")
            break
        try:
            total = _step(args, folder, made, size, total, texts, server, rows)
        except Exception:
            if guard is None or not guard.tripped:
                raise
            rows.append(Row(SECTION, f"curve stopped at {size:,} chunks", guard.tripped))
            break
    return rows


def _step(
    args: argparse.Namespace,
    folder: Path,
    url: str,
    size: int,
    total: int,
    texts: list[str],
    server: subprocess.Popen[bytes] | None,
    rows: list[Row],
) -> int:
    """Grow the collection to ``size`` chunks and measure it (rows added to ``rows``);
    the chunks it now holds."""
    per_file = args.milvus_chunks
    workers = args.milvus_curve_workers
    make_folder(folder, -(-size // per_file), per_file)
    sub = _subfolder(folder, size, per_file)
    seconds, stored = ingest(sub, url, workers)
    total += stored
    label = f"{total:,} chunks"
    _log(f"{label}: {stored} new chunks in {seconds:.1f} s")
    rows.append(
        Row(SECTION, f"ingest, {workers} worker{'s' * (workers > 1)}, growing to {label} "
            f"({stored:,} new)", f"{stored / seconds:.0f} chunks/s", "",
            f"{SYNTHETIC}; {_load()}")
    )  # fmt: skip
    _log(f"{rows[-1].measure}: {rows[-1].value} ({rows[-1].note})")
    rows.extend(_searches(sub, "milvus-lite", url, texts, label, server))
    if size <= args.milvus_embedded_max:
        rows.extend(_searches(sub, "embedded", None, texts, label, None))
    return total


def _subfolder(folder: Path, size: int, per_file: int) -> Path:
    """A folder of links to the first ``size`` chunks' files (the sizes share one folder of
    files, each size indexes its own prefix of it)."""
    files = -(-size // per_file)
    sub = folder.parent / f"docs-{size}"
    if not (sub / "done").exists():
        sub.mkdir(exist_ok=True)
        for i in range(files):
            name = f"d{i // 500:04d}/f{i:07d}.txt"
            (sub / name).parent.mkdir(exist_ok=True)
            if not (sub / name).exists():
                os.link(folder / name, sub / name)
        (sub / "done").write_text("")
    return sub


def _searches(
    folder: Path,
    name: str,
    url: str | None,
    texts: list[str],
    label: str,
    server: subprocess.Popen[bytes] | None,
) -> list[Row]:
    """Search latency with 1 and 8 clients, a search-only process's memory, and the
    Milvus server's."""
    rows: list[Row] = []
    engine = engine_for(folder, url)
    if url is None:  # the embedded index of the same folder, built (or brought up to date) here
        engine.reindex()  # type: ignore[attr-defined]
    engine.load_model()  # type: ignore[attr-defined]
    engine.search("warm up", 5)  # type: ignore[attr-defined]
    for clients in (1, 8):
        p50, p99 = percentiles_ms(latencies(engine, texts, clients))
        _log(f"{name} {label} {clients} clients: {p50:.1f} / {p99:.1f} ms")
        rows.append(
            Row(SECTION, f"search p50 / p99, {clients} client{'s' * (clients > 1)}, {name}, "
                f"{label}", f"{p50:.1f} / {p99:.1f} ms", "", f"{SYNTHETIC}; {_load()}")
        )  # fmt: skip
        _log(f"{rows[-1].measure}: {rows[-1].value} ({rows[-1].note})")
    engine.stop()  # type: ignore[attr-defined]
    out = json.loads(child("search", folder, url or "", {"queries": texts[:50]}).communicate()[0])
    rows.append(
        Row(SECTION, f"search-only process, peak RSS / PSS after 50 searches, {name}, {label}",
            f"{out['peak_rss_kib'] / 1024:.0f} / {out['pss_kib'] / 1024:.0f} MiB", "",
            f"{SYNTHETIC}; no model loaded")
    )  # fmt: skip
    _log(f"{rows[-1].measure}: {rows[-1].value} ({rows[-1].note})")
    if server is not None:
        m = memory(server.pid)
        rows.append(
            Row(SECTION, f"milvus-lite server, RSS / anonymous / peak RSS, {label} (and any "
                "collection still held)", f"{m['rss_kib'] / 1024:.0f} / "
                f"{m['anon_kib'] / 1024:.0f} / {m['peak_rss_kib'] / 1024:.0f} MiB", "",
                f"{SYNTHETIC}; machine {used_bytes() / GIB:.1f} GiB used")
        )  # fmt: skip
        _log(f"{rows[-1].measure}: {rows[-1].value} ({rows[-1].note})")
    return rows


def _too_big(
    server: subprocess.Popen[bytes], total: int, size: int, args: argparse.Namespace
) -> str:
    """Why growing the curve from ``total`` to ``size`` chunks would take the machine past
    its limit (empty: it would not): the server's anonymous memory grows by what it holds
    per chunk so far, and a step also needs the excess of its peak over its resident."""
    if total == 0 or server.poll() is not None:
        return ""
    m = memory(server.pid)
    per_chunk = m["anon_kib"] * 1024 / total  # held collections counted: on the safe side
    growth = per_chunk * (size - total)
    peak = (m["peak_rss_kib"] - m["rss_kib"]) * 1024 * size / total
    projected = used_bytes() + growth + peak
    if projected <= args.milvus_max_used_gib * GIB:
        return ""
    return (
        f"projected {projected / GIB:.1f} GiB used, over {args.milvus_max_used_gib:g}: "
        f"{per_chunk / 1024:.1f} KiB anonymous per chunk held at {total:,}, peak "
        f"{m['peak_rss_kib'] / 1024**2:.1f} GiB over {m['rss_kib'] / 1024**2:.1f} GiB resident"
    )


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def _log(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", file=sys.stderr, flush=True)


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
