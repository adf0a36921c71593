"""``bench.levers --store``: the lever table of a set searched on the Milvus store too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import levers, retrieval
from tests.milvuskit import MilvusServer

pytestmark = pytest.mark.slow  # milvus-lite

CORPUS = {
    "wing": ("Lift of thin wings", "The lift of a thin wing at small angles of attack."),
    "shell": ("Buckling of shells", "Cylindrical shells buckle under axial compression."),
    "flow": ("Boundary layers", "A laminar boundary layer on a flat plate separates."),
    "heat": ("Heat transfer", "Heat transfer to a cooled wall in hypersonic flow."),
}
QUERIES = {
    "q1": ("what is the lift of a thin wing", "wing"),
    "q2": ("when do shells buckle under compression", "shell"),
    "q3": ("heat transfer at hypersonic speeds", "heat"),
}


def write_dataset(folder: Path) -> None:
    folder.mkdir()
    lines = [json.dumps({"_id": d, "title": t, "text": x}) for d, (t, x) in CORPUS.items()]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    asked = [json.dumps({"_id": q, "text": text}) for q, (text, _) in QUERIES.items()]
    (folder / "queries.jsonl").write_text("\n".join(asked) + "\n")
    judged = [f"{q}\t{doc}\t1" for q, (_, doc) in QUERIES.items()]
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(judged) + "\n")


def row(table: str, label: str) -> list[str]:
    line = next(x for x in table.splitlines() if x.startswith(f"| {label} |"))
    return [cell.strip() for cell in line.strip("|").split("|")][1:]


def test_both_stores_rank_a_set_alike_from_the_same_vectors(
    tmp_path: Path, milvus: MilvusServer, capsys: pytest.CaptureFixture[str]
) -> None:
    data, work = tmp_path / "toy", tmp_path / "work"
    write_dataset(data)
    assert (
        retrieval.main(["--dataset", str(data), "--work", str(work), "--no-model", "--index-only"])
        == 0
    )
    capsys.readouterr()
    base = milvus.url().partition("?")[0]
    argv = ["--set", f"toy={data}:{work}", "--no-model", "--store", "both"]
    argv += ["--milvus-url", base, "--milvus-work", str(tmp_path / "mv")]
    assert levers.main(argv) == 0
    out = capsys.readouterr().out
    assert "### Levers, embedded store" in out and "### Levers, milvus store" in out
    side = out.split("### The stores side by side")[1]
    embedded, on_milvus = row(side, "default (nDCG@10)")[0].split(" / ")
    assert embedded == on_milvus and float(embedded) > 0.9  # each query finds its document
    assert row(side, "keyword only")[0] == "1.0000 / 1.0000"
    assert row(side, "largest difference (points)") == ["0.00"]
    assert row(side, "queries whose first ten differ, default") == ["0 of 3"]
    # the store pass's record went to the Milvus work folder, not the set's marker
    assert (tmp_path / "mv" / "toy" / retrieval.MARKER).exists()
    assert json.loads((work / retrieval.MARKER).read_text())["full_index"]["files_added"] == 4


def test_a_milvus_column_counts_as_the_collection_a_lever_was_chosen_on() -> None:
    deltas = {"cisi (Milvus)": 0.02, "cranfield (Milvus)": 0.001, "xquad (Milvus)": 0.0}
    keep, why = levers.verdict(deltas, frozenset({"cisi"}))
    assert not keep and "improves 1 collection(s) it was not chosen on (cranfield" in why
