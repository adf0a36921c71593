"""The floor for Chinese retrieval: a plain BM25 over character bigrams of whole documents.

Every document (title, then text) becomes the bigrams of its CJK runs (``cjk.bigrams``,
as the index makes them); every query is scored with all of its bigrams, a bigram that
occurs twice in the query counting twice (as ``rank_bm25`` does), k1 = 1.2, b = 0.75
and Lucene's idf. No passages, no cap, no stemming: what a keyword channel for Chinese
should at least reach on the same collection (``bench.retrieval --no-model
--channels keyword`` measures the server's).

    .venv/bin/python -m bench.cjk_floor --dataset ../shared/eval/lecard_dev

``--max-query-bigrams 64`` scores each query with its first 64 bigrams only.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.metrics import evaluate
from bench.retrieval import load_dataset
from micro_rag_mcp.text.cjk import bigrams

K1 = 1.2
B = 0.75


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cjk_floor", description=__doc__)
    p.add_argument("--dataset", type=Path, required=True)
    p.add_argument("--qrels", default="qrels.tsv")
    p.add_argument("--queries", default="queries.jsonl")
    p.add_argument("--max-query-bigrams", type=int, help="score with the first N bigrams only")
    args = p.parse_args(argv)
    started = time.perf_counter()
    ds = load_dataset(args.dataset, args.qrels, args.queries)
    postings: dict[str, list[tuple[int, int]]] = {}
    lengths: list[int] = []
    ids = list(ds.corpus)
    for n, doc_id in enumerate(ids):
        title, text = ds.corpus[doc_id]
        grams = bigrams(f"{title}\n{text}").split()
        lengths.append(len(grams))
        for gram, tf in Counter(grams).items():
            postings.setdefault(gram, []).append((n, tf))
    mean = sum(lengths) / max(len(lengths), 1)
    total = len(ids)
    run: dict[str, list[str]] = {}
    for qid, text in ds.queries.items():
        grams = bigrams(text).split()
        if args.max_query_bigrams:
            grams = grams[: args.max_query_bigrams]
        scores: Counter[int] = Counter()
        for gram, qtf in Counter(grams).items():
            docs = postings.get(gram, [])
            idf = math.log(1 + (total - len(docs) + 0.5) / (len(docs) + 0.5))
            for n, tf in docs:
                norm = K1 * (1 - B + B * lengths[n] / mean)
                scores[n] += qtf * idf * tf * (K1 + 1) / (tf + norm)
        run[qid] = [ids[n] for n, _ in scores.most_common(100)]
    metrics = evaluate(run, ds.qrels, ("ndcg@10", "recall@100", "mrr@10"))
    cap = f", first {args.max_query_bigrams} bigrams" if args.max_query_bigrams else ""
    print(
        f"{ds.name}: {len(ids)} documents, {len(ds.queries)} queries, bigram BM25 of whole "
        f"documents{cap}: "
        + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        + f" ({time.perf_counter() - started:.0f} s)",
        file=sys.stdout,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
