"""Encoder speed and agreement: fp32 against int8, on the same chunks, in one run.

    .venv/bin/python -m bench.encoder --catalog <tmp>/bench-scifact-1000/index/catalog.sqlite3 \
        [--scifact <eval>/scifact --docs 1000 --queries 200]

Takes real chunk texts from an index's catalog, embeds them with both encoders in
alternating rounds (so machine load hits both alike), and prints chunks/s for each,
the ratio, and the cosine between the two vectors of each chunk. ``--scifact`` adds the
vector channel's nDCG@10 of each on a SciFact subset (``bench.encoders.subset``).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import time
from pathlib import Path

import numpy as np

from micro_rag_mcp.model.embedder import load_embedder


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--catalog", type=Path, help="chunks from here (else SciFact's, cut)")
    p.add_argument("--chunks", type=int, default=400)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scifact", type=Path, help="SciFact's folder: nDCG@10 of each too")
    p.add_argument("--docs", type=int, default=1000)
    p.add_argument("--queries", type=int, default=200)
    args = p.parse_args()
    if args.catalog is None and args.scifact is None:
        p.error("--catalog or --scifact is needed")
    texts = _texts(args.catalog, args.scifact, args.chunks)
    threads = len(os.sched_getaffinity(0))
    encoders = {
        "fp32": load_embedder(threads=threads),
        "int8": load_embedder(threads=threads, quantize=True),
    }
    seconds = {name: 0.0 for name in encoders}
    vectors = {}
    for _ in range(args.rounds):
        for name, enc in encoders.items():
            started = time.perf_counter()
            vectors[name] = enc.embed_documents(texts)
            seconds[name] += time.perf_counter() - started
    speed = {name: args.rounds * len(texts) / s for name, s in seconds.items()}
    cosine = (vectors["fp32"] * vectors["int8"]).sum(axis=1)
    print(f"{len(texts)} chunks x {args.rounds} rounds, {threads} threads")
    print("| encoder | chunks/s |")
    print("| --- | ---: |")
    for name in encoders:
        print(f"| {name} | {speed[name]:.1f} |")
    print(f"int8 / fp32 speed: {speed['int8'] / speed['fp32']:.2f}x")
    q = np.percentile(cosine, [1, 5, 50])
    print(
        f"cosine(fp32, int8) per chunk: min {cosine.min():.4f}, p1 {q[0]:.4f}, "
        f"p5 {q[1]:.4f}, median {q[2]:.4f}"
    )
    if args.scifact:
        from bench.encoders import subset, vector_ndcg

        docs, queries, qrels = subset(args.scifact, args.docs, args.queries)
        print(f"vector channel, SciFact subset ({len(docs)} abstracts, {len(queries)} claims)")
        for name, enc in encoders.items():
            print(f"| {name} | nDCG@10 {vector_ndcg(enc, docs, queries, qrels)[0]:.4f} |")
    return 0


def _texts(catalog: Path | None, scifact: Path | None, count: int) -> list[str]:
    """Chunk texts from ``catalog``, else SciFact's first abstracts cut to 1,000 characters."""
    if catalog is not None:
        conn = sqlite3.connect(catalog)
        sql = "SELECT text FROM chunks ORDER BY id LIMIT ?"
        texts = [t for (t,) in conn.execute(sql, (count,))]
        conn.close()
        return texts
    assert scifact is not None
    with (scifact / "corpus.jsonl").open(encoding="utf-8") as lines:
        docs = [json.loads(line) for _, line in zip(range(count), lines, strict=False)]
    return [f"{d.get('title', '')}\n{d['text']}"[:1000] for d in docs]


if __name__ == "__main__":
    raise SystemExit(main())
