"""Tables that open with a title row: the title is the section, the row under it the header."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from micro_rag_mcp.ingest.readers import Document, read_document
from micro_rag_mcp.text.chunking import Locator
from tests.formatfactory import make_xlsx

Rows = Sequence[Sequence[object]]

CUPS: Rows = [
    ["Stanley Cups", "", ""],
    ["Team", "Location", "Cups"],
    ["Canadiens", "Montreal", 24],
    ["Maple Leafs", "Toronto", 13],
]


def write_table(tmp_path: Path, kind: str, rows: Rows) -> Path:
    """``rows`` as a file of ``kind`` (csv, tsv, xlsx); CSV cells are written as text."""
    if kind == "xlsx":
        return make_xlsx(
            tmp_path / "t.xlsx", {"Cups": [[v if v != "" else None for v in r] for r in rows]}
        )
    sep = "\t" if kind == "tsv" else ","
    path = tmp_path / f"t.{kind}"
    path.write_text("\n".join(sep.join(str(v) for v in row) for row in rows) + "\n")
    return path


def section_and_place(doc: Document, needle: str) -> tuple[str | None, str | None]:
    start = doc.text.index(needle)
    locate = Locator(doc.text, sections=doc.sections, locators=doc.locators, rows=doc.rows)
    return locate.section(start), locate.where(start, start + len(needle))


def read(path: Path) -> Document:
    return read_document(path, max_bytes=10**8)


@pytest.mark.parametrize("kind", ["csv", "tsv", "xlsx"])
def test_a_title_row_becomes_the_section_and_the_next_row_labels_the_cells(
    tmp_path: Path, kind: str
) -> None:
    doc = read(write_table(tmp_path, kind, CUPS))
    line = "Team: Canadiens; Location: Montreal; Cups: 24"
    assert line in doc.text
    assert "Stanley Cups:" not in doc.text and "Column 2" not in doc.text
    sheet = 'sheet "Cups" ' if kind == "xlsx" else ""
    assert section_and_place(doc, line) == ("Stanley Cups", f"{sheet}row 3")


@pytest.mark.parametrize("kind", ["csv", "xlsx"])
def test_title_and_subtitle_rows_above_the_header_both_go_into_the_section(
    tmp_path: Path, kind: str
) -> None:
    rows = [["Stanley Cups", ""], ["", ""], ["As of 2024", ""], ["Team", "Cups"], ["Bruins", 6]]
    doc = read(write_table(tmp_path, kind, rows))
    assert section_and_place(doc, "Team: Bruins; Cups: 6")[0] == "Stanley Cups › As of 2024"


def test_each_sheet_has_its_own_title_or_none(tmp_path: Path) -> None:
    path = make_xlsx(
        tmp_path / "book.xlsx",
        {
            "A": [["Revenue 2024"], ["Region", "Total"], ["North", 10]],
            "B": [["Name", "Team"], ["Ada", "Core"]],
        },
    )
    doc = read(path)
    assert section_and_place(doc, "Region: North; Total: 10") == ("Revenue 2024", 'sheet "A" row 3')
    assert section_and_place(doc, "Name: Ada; Team: Core") == (None, 'sheet "B" row 2')


NOT_TITLES = {
    "one column": ([["Name"], ["Ada"], ["Grace"]], "Name: Ada"),
    "numbers under it": (
        [["Year", ""], ["2023", "12"], ["2024", "15"]],
        "Year: 2023; Column 2: 12",
    ),
    "repeated label": ([["Totals", ""], ["Q", "Q"], ["1", "2"]], "Totals: Q; Column 2: Q"),
    "title in two cells": (
        [["Report", "2024", ""], ["Team", "City", "Cups"], ["A", "B", "1"]],
        "Report: Team",
    ),
    "four one-cell rows": ([["a"], ["b"], ["c"], ["d"], ["Team", "City"], ["X", "Y"]], "a: b"),
}


@pytest.mark.parametrize("shape", sorted(NOT_TITLES))
def test_shapes_left_alone_keep_the_first_row_as_the_header(tmp_path: Path, shape: str) -> None:
    rows, expected = NOT_TITLES[shape]
    doc = read(write_table(tmp_path, "csv", rows))
    assert expected in doc.text
    assert doc.sections in ((), ((0, ""),))


def test_a_plain_header_row_is_unchanged(tmp_path: Path) -> None:
    doc = read(write_table(tmp_path, "csv", [["Team", "City"], ["Bruins", "Boston"]]))
    assert doc.text == "Team: Bruins; City: Boston"
    assert section_and_place(doc, doc.text) == (None, "row 2")


@pytest.mark.parametrize("sep", [";", ",", "\t", "|"])
def test_a_bare_title_line_does_not_hide_the_delimiter(tmp_path: Path, sep: str) -> None:
    path = tmp_path / "cups.csv"
    rows = ["Team", "Location", "Cups"], ["Canadiens", "Montreal", "24"], ["Leafs", "Toronto", "13"]
    path.write_text("Stanley Cups\n" + "".join(sep.join(row) + "\n" for row in rows))
    doc = read(path)
    assert section_and_place(doc, "Team: Leafs; Location: Toronto; Cups: 13") == (
        "Stanley Cups",
        "row 4",
    )
