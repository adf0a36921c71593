"""Scoped search on a real folder: every result inside the scope, and ``top_k`` filled.

    .venv/bin/python -m bench.scoped_devset --folder /path/realdocs --work <work>/scoped-dev \
        --glob 'docx/**' --queries 100

The folder is copied to ``--work`` (once) and its files' modification times set to a
day each, in path order from 2020-01-01, so a date range takes a known part of it; the
catalog side of an index is built there (``sync_files``: the keyword channel; the
vector channel's scope is measured on ``bench.scoped_search``'s vectors). Queries are
six-word phrases of random passages of the whole folder. For the glob, a date range
(the first half of the days) and both at once, it reports how many searches came back
with ``top_k`` results and how many had every result inside the scope, against the
number of chunks the scope holds.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
import time
from pathlib import Path

from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.local.answers.search import hybrid_search
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.layout import IndexPaths
from micro_rag_mcp.local.passes.indexer import sync_files
from micro_rag_mcp.model.embedder import load_embedder
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.scope import parse_scope, resolve

DAY_S = 86_400
Y2020 = 1_577_836_800
_WORD = re.compile(r"\w+")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--glob", required=True, help="the path_glob to try, e.g. 'docx/**'")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--model", action="store_true", help="both channels, the real encoder")
    args = ap.parse_args()
    docs = args.work / "docs"
    if not docs.exists():
        shutil.copytree(args.folder, docs)
    files = sorted(p for p in docs.rglob("*") if p.is_file() and "index" not in p.parts)
    for day, path in enumerate(files):
        path.chmod(0o644)
        os.utime(path, (Y2020 + day * DAY_S, Y2020 + day * DAY_S))
    settings = Settings(data_folder=docs, index_folder=docs / "index", watch="off")
    settings.index_folder.mkdir(exist_ok=True)
    engine = None
    if args.model:
        engine = Engine(settings, lambda: load_embedder(threads=len(os.sched_getaffinity(0))))
        engine.load_model()
        engine.reindex()
    catalog = Catalog.open(IndexPaths(settings.index_folder).catalog)
    if engine is None:
        sync_files(catalog, settings)
    rng = random.Random(1)
    rows = [c for p in sorted(catalog.files()) for c in catalog.file_chunks(p, 0, 1 << 40)]
    queries = []
    for chunk in rng.sample(rows, min(len(rows), 4 * args.queries)):
        words = _WORD.findall(chunk.text)
        if len(words) >= 12:
            at = rng.randrange(len(words) - 6)
            queries.append(" ".join(words[at : at + 6]))
    queries = queries[: args.queries]
    half = time.strftime("%Y-%m-%d", time.gmtime(Y2020 + (len(files) // 2) * DAY_S))
    cases = [
        (f"path_glob {args.glob}", parse_scope(path_glob=args.glob)),
        (f"modified_before {half}", parse_scope(modified_before=half)),
        ("both", parse_scope(path_glob=args.glob, modified_before=half)),
    ]
    params = SearchParams(channels=("keyword",))
    print(f"{len(catalog.files())} files, {len(rows)} chunks, {len(queries)} queries")
    for label, scope in cases:
        assert scope is not None
        within = resolve(catalog, scope)
        full = inside = both = 0
        for q in queries:
            if engine is not None:
                hits = engine.search(q, args.top_k, 0.0, scope).hits
                both += any(len(h.channels) == 2 for h in hits)
            else:
                hits = hybrid_search(
                    catalog, None, q, None, top_k=args.top_k, score_threshold=0.0,
                    params=params, within=within,
                ).hits  # fmt: skip
            full += len(hits) == args.top_k
            inside += all(scope.matches(h.chunk.path, h.chunk.ext, h.chunk.mtime_ns) for h in hits)
        print(
            f"{label:40} | {len(within.file_ids)} files, {within.chunk_ids.size} chunks | "
            f"top {args.top_k} full {full}/{len(queries)} | all in scope {inside}/{len(queries)}"
            + (f" | a hit found by both channels {both}/{len(queries)}" if engine else "")
        )
    catalog.close()
    if engine is not None:
        engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
