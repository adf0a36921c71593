"""Two ``bench.retrieval --dump-run`` files of one dataset, compared query by query.

For each channel: the mean nDCG@10 of each run, the mean of their per-query difference
(the second minus the first) with a 95 % bootstrap interval over queries, and how many
queries the second ranks better or worse. A difference of the means alone cannot tell a
systematic change from a few queries that moved.

    .venv/bin/python -m bench.paired_runs <eval>/cranfield fp32.run int8.run
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from pathlib import Path

from bench.metrics import dedupe, per_query, read_qrels

RESAMPLES = 2_000


def documents(dump: dict[str, list[list[object]]]) -> dict[str, list[str]]:
    """Each query's documents, best first, from its (doc id, score) chunk hits."""
    return {q: dedupe(str(hit[0]) for hit in hits) for q, hits in dump.items()}


def interval(diffs: Sequence[float], seed: int = 0) -> tuple[float, float]:
    """A 95 % bootstrap interval of the mean of ``diffs``."""
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(RESAMPLES))
    return means[int(RESAMPLES * 0.025)], means[int(RESAMPLES * 0.975) - 1]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.paired_runs", description=__doc__.splitlines()[0])
    p.add_argument("dataset", type=Path, help="the BEIR folder (its qrels.tsv)")
    p.add_argument("first", type=Path, help="--dump-run of the reference")
    p.add_argument("second", type=Path, help="--dump-run compared with it")
    args = p.parse_args(argv)
    qrels = read_qrels(args.dataset / "qrels.tsv")
    first, second = (json.loads(f.read_text(encoding="utf-8")) for f in (args.first, args.second))
    print("| channel | first | second | second − first (95 %) | better / worse |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for channel in first:
        a = per_query(documents(first[channel]), qrels, "ndcg", 10)
        b = per_query(documents(second[channel]), qrels, "ndcg", 10)
        queries = sorted(set(a) & set(b))
        diffs = [b[q] - a[q] for q in queries]
        low, high = interval(diffs)
        mean_a = sum(a[q] for q in queries) / len(queries)
        mean_b = sum(b[q] for q in queries) / len(queries)
        better, worse = sum(d > 1e-9 for d in diffs), sum(d < -1e-9 for d in diffs)
        print(
            f"| {channel} | {mean_a:.4f} | {mean_b:.4f} | {100 * (mean_b - mean_a):+.2f} "
            f"({100 * low:+.2f}, {100 * high:+.2f}) | {better} / {worse} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
