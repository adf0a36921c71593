"""``bench.stored_vectors``: a set's passages take their vectors from its embedded index,
whatever language they are in (a CJK text is stored compressed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import retrieval
from bench.stored_vectors import StoredVectors

# Long enough that the catalog stores it compressed (a BLOB), as it does a real CJK passage.
JAPANESE = "富士山は日本で最も高い山であり、その美しい姿は古くから多くの人々に愛されてきた。" * 6
CORPUS = {
    "fuji": ("富士山", JAPANESE),
    "wing": ("Lift of thin wings", "The lift of a thin wing at small angles of attack."),
}


def test_every_stored_passage_is_known_by_its_text_cjk_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, work = tmp_path / "toy", tmp_path / "work"
    data.mkdir()
    lines = [json.dumps({"_id": d, "title": t, "text": x}) for d, (t, x) in CORPUS.items()]
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (data / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "富士山"}) + "\n")
    (data / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq\tfuji\t1\n")
    argv = ["--dataset", str(data), "--work", str(work), "--no-model", "--index-only"]
    assert retrieval.main(argv) == 0
    capsys.readouterr()
    stored = StoredVectors(retrieval.NoModel(), work / "index")
    # the keys are the texts the encoder is given, the Japanese one read back whole
    assert len(stored.known) == 2
    assert any(key.endswith(JAPANESE) for key in stored.known)
