"""Should the vector channel take a share for Chinese? Measured where it decides the top.

Embedding a whole Chinese collection takes an hour on two cores (a character is a
token, so every chunk fills the encoder's 256), so this embeds only what decides the
first ten: each query's ``--candidates`` best keyword candidates, through the real
keyword path, and their files' first chunks, with the real encoder. They are fused as
the search fuses them: the keyword channel alone, the default's vector share as for an
English query, a tenth of it, and as the search now does (the share scaled by the
query's letters that are not CJK). It also counts ``no_good_match`` among the queries
whose relevant document the keyword channel puts in the first five.

    .venv/bin/python -m bench.retrieval --dataset ../shared/eval/lecard_dev \\
        --work <work>/lecard --no-model --channels keyword     # the index, once
    .venv/bin/python -m bench.cjk_vectors --dataset ../shared/eval/lecard_dev \\
        --work <work>/lecard
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.metrics import evaluate
from bench.retrieval import load_dataset, safe_names
from micro_rag_mcp.local.answers.search import keyword_evidence
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.model.embedder import load_embedder
from micro_rag_mcp.search.fusion import Candidates, SearchParams, fuse
from micro_rag_mcp.search.plan import plan_query
from micro_rag_mcp.text.cjk import read_share
from micro_rag_mcp.text.vector_text import embedding_text


def documents(
    fused: Mapping[int, float], paths: Mapping[int, str], doc_of_stem: Mapping[str, str]
) -> list[str]:
    """The documents of the fused chunks, best first, each once."""
    order: list[str] = []
    for cid in sorted(fused, key=lambda c: (-fused[c], c)):
        doc = doc_of_stem.get(Path(paths[cid]).stem, "")
        if doc not in order:
            order.append(doc)
    return order


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cjk_vectors", description=__doc__)
    p.add_argument("--dataset", type=Path, required=True)
    p.add_argument("--work", type=Path, required=True, help="bench.retrieval's work folder")
    p.add_argument("--candidates", type=int, default=40)
    args = p.parse_args(argv)
    ds = load_dataset(args.dataset, "qrels.tsv", "queries.jsonl")
    doc_of_stem = {stem: doc for doc, stem in safe_names(list(ds.corpus)).items()}
    catalog = Catalog.open_reader(args.work / "index" / "catalog.sqlite3")
    embedder = load_embedder(threads=len(os.sched_getaffinity(0)))
    params = SearchParams()
    variants = {
        "keyword channel alone": None,
        "the vector channel's share as for English": 1.0,
        "a tenth of it": 0.1,
        "scaled by the query's non-CJK letters (the search's)": -1.0,
    }
    runs: dict[str, dict[str, list[str]]] = {name: {} for name in variants}
    flagged = answered = 0
    cosines: list[float] = []
    started = time.monotonic()
    for qid, text in ds.queries.items():
        hits, idf = keyword_evidence(catalog, plan_query(text, params), params)
        hits = hits[: args.candidates]
        ids = [cid for cid, _ in hits]
        heads = catalog.chunks.head_ids(ids)
        need = sorted(set(ids) | set(heads.values()))
        texts = catalog.chunks.chunk_texts(need)
        rows = catalog.chunks.fetch(need)
        vectors = embedder.embed_documents([embedding_text(texts[c][1], texts[c][2]) for c in need])
        cos = dict(zip(need, (vectors @ embedder.embed_query(text)).tolist(), strict=True))
        cosines += cos.values()
        base = Candidates(
            vector=sorted(((c, cos[c]) for c in ids), key=lambda item: -item[1]),
            keyword=hits,
            cosine={c: cos[c] for c in ids},
            heads=heads,
            head_cosine={h: cos[h] for h in heads.values() if h not in ids},
            vector_ran=True,
            keyword_ran=True,
            keyword_idf=idf,
            read_share=read_share(text),
        )
        paths = {cid: rows[cid].path for cid in rows}
        for name, share in variants.items():
            if share is None:
                fused: Mapping[int, float] = dict(hits)
            else:
                fused = fuse(base if share < 0 else replace(base, read_share=share), params).fused
            runs[name][qid] = documents(fused, paths, doc_of_stem)
        relevant = {d for d, grade in ds.qrels.get(qid, {}).items() if grade > 0}
        if relevant & set(runs["keyword channel alone"][qid][:5]):
            answered += 1
            flagged += fuse(base, params).no_good_match
    catalog.close()
    p5, p50, p95 = np.percentile(cosines, [5, 50, 95])
    print(
        f"{len(ds.queries)} queries, {len(cosines)} passages embedded in "
        f"{time.monotonic() - started:.0f} s; cosines p5 {p5:.3f}, p50 {p50:.3f}, p95 {p95:.3f}"
    )
    print("| ranking | nDCG@10 |\n| --- | ---: |")
    for name, run in runs.items():
        print(f"| {name} | {evaluate(run, ds.qrels, ('ndcg@10',))['ndcg@10']:.4f} |")
    print(f"no_good_match among the {answered} answered queries: {flagged}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
