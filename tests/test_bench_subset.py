"""The dev-collection subsets the benchmarks search: judged documents kept, others drawn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.dev_subset import write_subset
from bench.retrieval import load_dataset


def _collection(root: Path) -> Path:
    root.mkdir()
    docs = [{"_id": f"d{i}", "title": f"T{i}", "text": f"text {i}"} for i in range(40)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [{"_id": f"q{i}", "text": f"question {i}"} for i in (3, 1, 2, 0)]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    rows = ["q0\td0\t1", "q1\td1\t2", "q1\td5\t0", "q2\td2\t0", "q3\td3\t1"]
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    return root


def test_a_subset_keeps_the_first_questions_their_judged_documents_and_draws_others(
    tmp_path: Path,
) -> None:
    source = _collection(tmp_path / "full")
    questions, documents = write_subset(source, tmp_path / "sub", queries=2, others=5, seed=7)
    sub = load_dataset(tmp_path / "sub", "qrels.tsv", "queries.jsonl")
    # q2 has no relevant document; the first two with one, in the file's order: q3, q1
    assert list(sub.queries) == ["q3", "q1"]
    assert sub.qrels == {"q3": {"d3": 1}, "q1": {"d1": 2, "d5": 0}}
    assert (questions, documents) == (2, 8)
    assert {"d1", "d3", "d5"} <= set(sub.corpus)
    assert sub.corpus["d3"] == ("T3", "text 3")
    write_subset(source, tmp_path / "again", queries=2, others=5, seed=7)
    again = load_dataset(tmp_path / "again", "qrels.tsv", "queries.jsonl")
    assert set(again.corpus) == set(sub.corpus)


def test_a_subset_is_never_written_over_a_folder(tmp_path: Path) -> None:
    source = _collection(tmp_path / "full")
    (tmp_path / "sub").mkdir()
    with pytest.raises(FileExistsError):
        write_subset(source, tmp_path / "sub", queries=1, others=1, seed=7)
