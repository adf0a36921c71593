"""Ranking metrics with the trec_eval definitions, computed per query then averaged.

* Relevance: a judged grade > 0 is relevant; grade <= 0 (and unjudged) is not.
* nDCG@k (trec_eval ``ndcg_cut``): gain = the relevance grade itself (LINEAR, not
  2^grade - 1), discount = log2(rank + 1) with ranks from 1. The ideal DCG ranks every
  judged relevant document of the query by grade, whether or not it was retrieved.
* Recall@k: relevant documents in the top k / all relevant documents of the query.
* MRR@k: 1 / rank of the first relevant document within the top k, 0 if there is none.

Averages are over the queries with at least one relevant judgment (queries absent from
the judgments, or judged with grades <= 0 only, are skipped). A judged query missing
from the run counts as 0, like ``trec_eval -c``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

Qrels = Mapping[str, Mapping[str, int]]  # query id -> doc id -> grade
Run = Mapping[str, Sequence[str]]  # query id -> doc ids, best first, no duplicates


def relevant(judged: Mapping[str, int]) -> dict[str, int]:
    """The judged documents with grade > 0."""
    return {doc: grade for doc, grade in judged.items() if grade > 0}


def ndcg_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    rel = relevant(judged)
    if not rel:
        return 0.0
    dcg = sum(rel.get(doc, 0) / math.log2(i + 1) for i, doc in enumerate(ranking[:k], 1))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
    return dcg / idcg


def recall_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    rel = relevant(judged)
    if not rel:
        return 0.0
    return sum(1 for doc in ranking[:k] if doc in rel) / len(rel)


def mrr_at_k(ranking: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    rel = relevant(judged)
    for i, doc in enumerate(ranking[:k], 1):
        if doc in rel:
            return 1.0 / i
    return 0.0


METRICS = {"ndcg": ndcg_at_k, "recall": recall_at_k, "mrr": mrr_at_k}


def per_query(run: Run, qrels: Qrels, name: str, k: int) -> dict[str, float]:
    """One metric for every query with a relevant judgment."""
    fn = METRICS[name]
    return {
        qid: fn(run.get(qid, ()), judged, k) for qid, judged in qrels.items() if relevant(judged)
    }


def evaluate(run: Run, qrels: Qrels, measures: Iterable[str]) -> dict[str, float]:
    """Mean of each measure (``"ndcg@10"``, ``"recall@100"``, ``"mrr@10"``) over queries."""
    out: dict[str, float] = {}
    for measure in measures:
        name, _, k = measure.partition("@")
        scores = per_query(run, qrels, name, int(k))
        out[measure] = sum(scores.values()) / len(scores) if scores else 0.0
    return out


def dedupe(ranking: Iterable[str]) -> list[str]:
    """Keep each document at its first (best) rank."""
    return list(dict.fromkeys(ranking))


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A BEIR qrels TSV: header row, then ``query-id  corpus-id  score``."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(newline="", encoding="utf-8") as f:
        rows = csv.reader(f, delimiter="\t")
        next(rows, None)
        for row in rows:
            if len(row) < 3:
                continue
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (numpy's default), ``p`` in [0, 100]."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * p / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
