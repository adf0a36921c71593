"""The catalog's size against its text, per collection, and what in it takes the space.

Each dataset (or its first ``--docs`` documents, with every document judged for the first
``--queries`` queries) is written as files and indexed by the real pipeline without the
model (``bench.retrieval.NoModel``: the catalog is the same, the vectors are not
measured). Printed per collection: the text's bytes (the files), the catalog's bytes
(``catalog.sqlite3`` after a checkpoint) and their ratio, and with ``--tables`` the
bytes of each table (SQLite's ``dbstat``). ``--dump-run`` writes the keyword channel's
rankings (document ids per query, best first); ``--compare`` says whether they are the
ones a dump of another build holds.

    .venv/bin/python -m bench.catalog_size --dataset ../shared/eval/jaquad \\
        --docs 3000 --queries 100 --work <work>/size-ja --tables
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from bench.retrieval import (
    CHANNELS,
    Dataset,
    NoModel,
    index,
    load_dataset,
    prepare,
    search_all,
)
from micro_rag_mcp.core.settings import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from micro_rag_mcp.search.fusion import SearchParams

logger = logging.getLogger("bench")


def subset(ds: Dataset, docs: int | None, queries: int | None) -> Dataset:
    """The first ``queries`` queries, their judged documents and the first ``docs`` others."""
    kept_q = dict(list(ds.queries.items())[:queries]) if queries else ds.queries
    if not docs:
        return replace(ds, queries=kept_q)
    wanted = {d for q in kept_q for d in ds.qrels.get(q, {}) if d in ds.corpus}
    for doc_id in ds.corpus:
        if len(wanted) >= docs:
            break
        wanted.add(doc_id)
    corpus = {d: t for d, t in ds.corpus.items() if d in wanted}
    mark = hashlib.sha256(("\n".join(sorted(corpus)) + ds.fingerprint).encode()).hexdigest()
    return replace(ds, corpus=corpus, queries=kept_q, fingerprint=mark)


def table_bytes(catalog: Path) -> dict[str, int]:
    """Bytes of the pages of each table and index of the catalog, largest first."""
    conn = sqlite3.connect(catalog)
    try:
        rows = conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        conn.close()
    return {str(n): int(b) for n, b in rows}


def checkpointed_size(catalog: Path) -> int:
    conn = sqlite3.connect(catalog)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return catalog.stat().st_size


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.catalog_size", description=__doc__)
    p.add_argument("--dataset", type=Path, action="append", required=True)
    p.add_argument("--docs", type=int, help="only this many documents (judged ones first)")
    p.add_argument("--queries", type=int, help="only the first N queries")
    p.add_argument("--work", type=Path, required=True, help="a folder per dataset under it")
    p.add_argument("--tables", action="store_true", help="print each table's bytes")
    p.add_argument("--dump-run", type=Path, help="write the keyword rankings here (JSON)")
    p.add_argument("--compare", type=Path, help="a --dump-run of another build to compare")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    print("| collection | docs | text bytes | catalog bytes | catalog / text |")
    print("| --- | ---: | ---: | ---: | ---: |")
    runs: dict[str, dict[str, list[str]]] = {}
    details: list[str] = []
    for folder in args.dataset:
        ds = subset(load_dataset(folder, "qrels.tsv", "queries.jsonl"), args.docs, args.queries)
        ws = prepare(ds, args.work / ds.name, DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP)
        index(ws, NoModel())
        text = sum(f.stat().st_size for f in ws.docs.iterdir())
        catalog = ws.index / "catalog.sqlite3"
        size = checkpointed_size(catalog)
        print(f"| {ds.name} | {len(ds.corpus)} | {text:,} | {size:,} | {size / text:.2f}x |")
        if args.tables:
            details.append(f"\n{ds.name}: bytes per table")
            details += [
                f"  {n:28} {b:>14,} {b / text:6.2f}x" for n, b in table_bytes(catalog).items()
            ]
        if args.dump_run or args.compare:
            params = CHANNELS["keyword"](SearchParams())
            cr = search_all(ws, NoModel(), ds, "keyword", params, top_k=100, score_threshold=0.0)
            runs[ds.name] = cr.run
    print("\n".join(details))
    if args.dump_run:
        args.dump_run.write_text(json.dumps(runs, indent=0))
    if args.compare:
        old = json.loads(args.compare.read_text())
        for name, run in runs.items():
            same = sum(old.get(name, {}).get(q) == r for q, r in run.items())
            print(f"{name}: keyword rankings identical for {same} of {len(run)} queries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
