"""The shapes the benchmarks write documents in, and the harness's query limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.metrics import evaluate
from bench.retrieval import MARKER, Dataset, first_queries, prepare
from bench.shape_levers import Cell, channel_table, lever_table
from bench.shapes import SHAPES, document_text, suffix_of
from micro_rag_mcp.ingest.readers.text import markdown_sections, opening_title

TITLE = "Lift of  thin wings"
TEXT = "  The lift of a thin wing at small angles of attack.\n\nA second paragraph.  "


def test_title_txt_is_the_harness_s_first_shape_byte_for_byte() -> None:
    assert document_text("title-txt", TITLE, TEXT) == f"{TITLE.strip()}\n\n{TEXT.strip()}\n"
    assert document_text("title-txt", "", "text") == "\n\ntext\n"
    assert suffix_of("title-txt") == ".txt"


def test_only_title_txt_opens_with_a_line_the_txt_title_rule_takes() -> None:
    text = "The lift of a thin wing at small angles of attack, in one paragraph."
    titles = {s: opening_title(document_text(s, TITLE, text)) for s in SHAPES}
    assert titles == {
        "title-txt": "Lift of thin wings",
        "md": "Lift of thin wings",  # .md files are read by the Markdown reader instead
        "plain": "",
        "title-joined": "",
    }


def test_md_is_a_note_under_its_title_as_a_heading() -> None:
    text = document_text("md", TITLE, TEXT)
    assert suffix_of("md") == ".md"
    assert text.startswith("# Lift of thin wings\n\nThe lift of a thin wing")
    assert [title for _, title in markdown_sections(text)] == ["Lift of thin wings"]


def test_plain_holds_the_text_alone() -> None:
    assert document_text("plain", TITLE, TEXT) == f"{TEXT.strip()}\n"
    assert suffix_of("plain") == ".txt"


def test_title_joined_puts_the_title_in_the_text_s_first_paragraph() -> None:
    text = document_text("title-joined", TITLE, TEXT)
    assert text.startswith("Lift of thin wings The lift of a thin wing")
    assert text.split("\n\n")[0].count("\n") == 0


@pytest.mark.parametrize("shape", ["md", "plain", "title-joined"])
def test_a_document_without_a_title_is_its_text_alone(shape: str) -> None:
    assert document_text(shape, "  ", TEXT) == f"{TEXT.strip()}\n"


def test_an_unknown_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown shape"):
        document_text("html", TITLE, TEXT)


def dataset() -> Dataset:
    corpus = {"d1": ("Wings", "Lift and drag."), "d2": ("Shells", "Buckling of shells.")}
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d1": 1}}
    queries = {"q1": "lift", "q2": "buckling", "q3": "drag"}
    return Dataset("toy", corpus, queries, qrels, "sha")


def test_prepare_writes_each_shape_with_its_suffix_and_records_it(tmp_path: Path) -> None:
    ws = prepare(dataset(), tmp_path / "md", 1000, 200, shape="md")
    assert sorted(p.name for p in ws.docs.iterdir()) == ["d1.md", "d2.md"]
    assert (ws.docs / "d1.md").read_text() == "# Wings\n\nLift and drag.\n"
    assert ws.settings.exts == (".md",) and ws.doc_of_path == {"d1.md": "d1", "d2.md": "d2"}
    assert json.loads((tmp_path / "md" / MARKER).read_text())["shape"] == "md"


def test_prepare_rewrites_a_work_folder_of_another_shape(tmp_path: Path) -> None:
    prepare(dataset(), tmp_path, 1000, 200, shape="title-txt")
    ws = prepare(dataset(), tmp_path, 1000, 200, shape="plain")
    assert (ws.docs / "d1.txt").read_text() == "Lift and drag.\n"
    assert not ws.reused


def test_org_suffix_keeps_the_shape_s_text(tmp_path: Path) -> None:
    ws = prepare(dataset(), tmp_path, 1000, 200, ".org", "title-txt")
    assert (ws.docs / "d2.org").read_text() == "Shells\n\nBuckling of shells.\n"


def test_a_limit_averages_over_the_queries_it_keeps() -> None:
    kept = first_queries(dataset(), 2)
    assert list(kept.queries) == ["q1", "q2"] and list(kept.qrels) == ["q1", "q2"]
    run = {"q1": ["d1"], "q2": ["d2"]}  # both right: the mean is 1, not 2/3
    assert evaluate(run, kept.qrels, ("ndcg@10",))["ndcg@10"] == pytest.approx(1.0)


def cell(keyword: float, vector: float, default: float, **off: float) -> Cell:
    ndcg = {"keyword only": keyword, "vector only": vector, "default": default}
    return Cell({**ndcg, **{f"{k.replace('_', ' ')} off": v for k, v in off.items()}}, 0)


def test_the_channel_table_reports_each_shape_s_worst_case() -> None:
    cells = {"plain": {"a": cell(0.30, 0.40, 0.42), "b": cell(0.50, 0.20, 0.49)}}
    table = channel_table(cells, ["a", "b"])
    assert "| plain | 0.3000 / 0.4000 / **0.4200** (+2.00) |" in table
    assert table.splitlines()[2].endswith("| -1.00 |")  # b: 0.49 against keyword's 0.50


def test_the_lever_table_gives_each_shape_its_own_verdict() -> None:
    helps = {"title_column_weight": 0.40}  # the default is 0.42 on both: +2 points each
    hurts = {"title_column_weight": 0.43}  # one point better without it
    cells = {
        "title-txt": {"a": cell(0.3, 0.4, 0.42, **helps), "b": cell(0.3, 0.4, 0.42, **helps)},
        "plain": {"a": cell(0.3, 0.4, 0.42, **helps), "b": cell(0.3, 0.4, 0.42, **hurts)},
    }
    rows = [r for r in lever_table(cells, ["a", "b"]).splitlines() if "title column" in r]
    assert rows[0].startswith("| title column weight | title-txt | +2.00 | +2.00 | holds")
    assert rows[1].startswith("| title column weight | plain | +2.00 | -1.00 | fails: costs b")
