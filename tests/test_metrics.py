"""The benchmark metrics, pinned on small hand-computed examples (trec_eval definitions)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench.metrics import (
    dedupe,
    evaluate,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    read_qrels,
    recall_at_k,
)

# One query, graded: a=3, b=2, d=1 are relevant; c is judged with grade 0 (NOT relevant);
# x is unjudged.
JUDGED = {"a": 3, "b": 2, "c": 0, "d": 1}
RANKING = ["x", "a", "c", "d", "b"]
LOG2_3 = math.log2(3)  # 1.5849625...


def test_ndcg_uses_linear_gain_and_log2_discount() -> None:
    # top 3 = x, a, c:  DCG@3 = 0/log2(2) + 3/log2(3) + 0/log2(4) = 1.8927893
    # ideal = 3, 2, 1:  IDCG@3 = 3/1 + 2/log2(3) + 1/log2(4) = 3 + 1.2618595 + 0.5 = 4.7618595
    # nDCG@3 = 1.8927893 / 4.7618595 = 0.3974895
    assert ndcg_at_k(RANKING, JUDGED, 3) == pytest.approx(0.3974895, abs=1e-6)
    # top 5 adds d at rank 4 and b at rank 5:
    # DCG@5 = 3/log2(3) + 1/log2(5) + 2/log2(6) = 1.8927893 + 0.4306766 + 0.7737056 = 3.0971715
    # IDCG@5 = IDCG@3 (only three relevant documents) = 4.7618595  ->  0.6504122
    assert ndcg_at_k(RANKING, JUDGED, 5) == pytest.approx(0.6504122, abs=1e-6)


def test_ndcg_gain_is_the_grade_not_exponential() -> None:
    # ranking b(1), a(4): DCG = 1/1 + 4/log2(3) = 3.5237190; IDCG = 4/1 + 1/log2(3) = 4.6309298
    # linear: 3.5237190 / 4.6309298 = 0.7609096
    # (with gain 2^g - 1 it would be (1 + 15/log2 3) / (15 + 1/log2 3) = 0.6694..., not this)
    assert ndcg_at_k(["b", "a"], {"a": 4, "b": 1}, 10) == pytest.approx(0.7609096, abs=1e-6)
    assert ndcg_at_k(["a", "b"], {"a": 4, "b": 1}, 10) == pytest.approx(1.0)


def test_ideal_dcg_counts_relevant_documents_never_retrieved() -> None:
    # a at rank 1; b (grade 1) never retrieved: DCG = 1; IDCG = 1 + 1/log2(3) = 1.6309298
    assert ndcg_at_k(["a"], {"a": 1, "b": 1}, 10) == pytest.approx(1 / (1 + 1 / LOG2_3))


def test_recall_at_k() -> None:
    # three relevant (a, b, d); top 3 holds a only -> 1/3; top 5 holds all three -> 1
    assert recall_at_k(RANKING, JUDGED, 3) == pytest.approx(1 / 3)
    assert recall_at_k(RANKING, JUDGED, 5) == pytest.approx(1.0)
    assert recall_at_k(RANKING, JUDGED, 1) == 0.0


def test_mrr_is_the_reciprocal_rank_of_the_first_relevant_within_k() -> None:
    # first relevant is a at rank 2 -> 1/2; c (grade 0) at rank 3 does not count
    assert mrr_at_k(RANKING, JUDGED, 10) == pytest.approx(0.5)
    assert mrr_at_k(RANKING, JUDGED, 1) == 0.0  # a is beyond the cut
    assert mrr_at_k(["c", "x", "d"], JUDGED, 10) == pytest.approx(1 / 3)


def test_nothing_relevant_retrieved_scores_zero() -> None:
    ranking = ["x", "c", "y"]  # c is judged but grade 0
    assert ndcg_at_k(ranking, JUDGED, 10) == 0.0
    assert recall_at_k(ranking, JUDGED, 10) == 0.0
    assert mrr_at_k(ranking, JUDGED, 10) == 0.0
    assert ndcg_at_k([], JUDGED, 10) == 0.0


def test_evaluate_averages_over_judged_queries_only() -> None:
    qrels = {
        "q1": {"a": 1},  # found at rank 1: nDCG 1, recall 1, MRR 1
        "q2": {"b": 1, "c": 1},  # b at rank 2, c missed
        "q3": {"z": 0},  # judged, but nothing relevant: skipped
        "q4": {"m": 1},  # judged but absent from the run: counts as 0
    }
    run = {
        "q1": ["a", "x"],
        "q2": ["y", "b"],
        "q3": ["z"],
        "q9": ["a"],  # no judgments at all: skipped
    }
    got = evaluate(run, qrels, ["ndcg@10", "recall@10", "mrr@10", "recall@1"])
    # q2: DCG = 1/log2(3) = 0.6309298; IDCG = 1 + 1/log2(3) = 1.6309298 -> 0.3868528
    q2_ndcg = (1 / LOG2_3) / (1 + 1 / LOG2_3)
    assert got["ndcg@10"] == pytest.approx((1 + q2_ndcg + 0) / 3)
    # recall: q1 1, q2 1/2, q4 0 -> 0.5
    assert got["recall@10"] == pytest.approx(0.5)
    # MRR: q1 1, q2 1/2, q4 0 -> 0.5
    assert got["mrr@10"] == pytest.approx(0.5)
    assert got["recall@1"] == pytest.approx(1 / 3)


def test_evaluate_with_no_judged_query_is_zero() -> None:
    assert evaluate({"q": ["a"]}, {}, ["ndcg@10"]) == {"ndcg@10": 0.0}


def test_dedupe_keeps_the_best_rank_of_each_document() -> None:
    # chunks of d1, d2, d1, d3, d2 -> documents d1 (rank 1), d2 (2), d3 (3)
    assert dedupe(["d1", "d2", "d1", "d3", "d2"]) == ["d1", "d2", "d3"]


def test_read_qrels_skips_the_header(tmp_path: Path) -> None:
    path = tmp_path / "qrels.tsv"
    path.write_text("query-id\tcorpus-id\tscore\n1\t10\t2\n1\t11\t0\n2\t10\t1\n")
    assert read_qrels(path) == {"1": {"10": 2, "11": 0}, "2": {"10": 1}}


def test_percentile_interpolates_linearly() -> None:
    # positions 0..4 over [1, 2, 3, 4, 10]: p50 -> index 2 -> 3; p90 -> index 3.6 -> 4 + 0.6*6
    assert percentile([10, 1, 3, 2, 4], 50) == pytest.approx(3.0)
    assert percentile([10, 1, 3, 2, 4], 90) == pytest.approx(7.6)
    assert math.isnan(percentile([], 50))
