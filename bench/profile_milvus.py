"""Where a Milvus store worker's time goes: one pass over a synthetic folder, profiled.

    .venv/bin/python -m bench.profile_milvus --files 1200            # rate only
    .venv/bin/python -m bench.profile_milvus --files 1200 --profile  # and the top functions
    .venv/bin/python -m bench.profile_milvus --files 1200 --batch-chunks 64

The folder is ``bench.perf_milvus``'s (Zipf-distributed pseudo-words, 5 chunks a file,
hash vectors of the model's width), indexed by one worker in this process into a new
collection of a milvus-lite server started for the run. The rate counts the pass only
(the collection is made first), the final seal included.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

from bench import work_folder
from bench.perf_milvus import HashEmbedder, engine_for, fresh, make_folder, start_server


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--work", type=Path, default=work_folder("profile-milvus"))
    p.add_argument("--files", type=int, default=1200, help="synthetic files, 5 chunks each")
    p.add_argument("--batch-chunks", type=int, help="chunks written together (default: ours)")
    p.add_argument("--profile", action="store_true", help="print the 25 costliest functions")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    folder = args.work / f"docs-{args.files}"
    make_folder(folder, args.files, 5)
    server, url = start_server(args.work)
    try:
        engine = engine_for(folder, fresh(url, "profile"))
        engine.load_model()  # type: ignore[attr-defined]
        if args.batch_chunks:
            engine.batch_chunks = args.batch_chunks  # type: ignore[attr-defined]
        hashed = HashEmbedder()  # the embedder engine_for gives the engine
        engine.index.collections.create(hashed.dimension, engine.identity(hashed))  # type: ignore[attr-defined]
        profiler = cProfile.Profile()
        started = time.perf_counter()
        if args.profile:
            profiler.enable()
        report = engine.reindex()  # type: ignore[attr-defined]
        profiler.disable()
        seconds = time.perf_counter() - started
        chunks = report.chunks_embedded
        print(f"{chunks} chunks in {seconds:.1f} s: {chunks / seconds:.0f} chunks/s")
        print(f"load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
        if args.profile:
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
