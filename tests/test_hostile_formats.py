"""Hostile files of the newer formats: a reason per file or a bounded read, never a stall."""

from __future__ import annotations

import base64
import json
import logging
import zipfile
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.core.formats import FORMATS
from micro_rag_mcp.ingest.readers import Document, read_document
from micro_rag_mcp.ingest.readers.data import MAX_COLUMNS
from micro_rag_mcp.ingest.readers.web import MAX_HTML_DEPTH, read_html
from micro_rag_mcp.local.engine import Engine
from tests.docfactory import MIB, make_docx, make_zip
from tests.formatfactory import Slide, code_cell, make_ipynb, make_pptx, make_xlsx, notebook_json

LIMIT = 10**9


def read(path: Path) -> Document:
    return read_document(path, max_bytes=LIMIT)


def refusal(path: Path) -> str:
    with pytest.raises(ReadError) as info:
        read(path)
    return str(info.value)


def make_bomb(path: Path, member: str, expanded_bytes: int) -> Path:
    """A zip whose ``member`` is ``expanded_bytes`` of zeros, written piece by piece."""
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf,
        zf.open(member, "w", force_zip64=True) as out,
    ):
        for _ in range(expanded_bytes // MIB):
            out.write(bytes(MIB))
    return path


def encrypt(plain: Path, out: Path) -> Path:
    """Password-protect an Office file as Office does (an encrypted OLE compound file)."""
    from msoffcrypto.format.ooxml import OOXMLFile

    with plain.open("rb") as src, out.open("wb") as dst:
        OOXMLFile(src).encrypt("s3cret", dst)
    return out


def forbid_expanding(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the archive was expanded")

    monkeypatch.setattr(zipfile.ZipFile, "open", refuse)
    monkeypatch.setattr(zipfile.ZipFile, "read", refuse)


# --------------------------------------------------------------------------- zip formats


@pytest.mark.parametrize(
    ("suffix", "member"),
    [(suffix, fmt.zip_member) for fmt in FORMATS if fmt.zip_member for suffix in fmt.suffixes],
)
def test_every_zip_format_is_vetted_before_a_library_opens_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, member: str
) -> None:
    bomb = make_bomb(tmp_path / f"bomb{suffix}", member, 20 * MIB)
    forbid_expanding(monkeypatch)
    reason = refusal(bomb)
    assert "zip bomb" in reason and member in reason


@pytest.mark.parametrize("suffix", [".xlsx", ".pptx", ".docx"])
def test_password_protected_office_files_get_a_reason(tmp_path: Path, suffix: str) -> None:
    plain = {
        ".xlsx": lambda p: make_xlsx(p, {"S": [["a"], ["b"]]}),
        ".pptx": lambda p: make_pptx(p, [Slide("Secret plans")]),
        ".docx": lambda p: make_docx(p, ["secret"]),
    }[suffix](tmp_path / f"plain{suffix}")
    locked = encrypt(plain, tmp_path / f"locked{suffix}")
    assert refusal(locked) == (
        f"encrypted {suffix[1:].upper()} (needs a password), or an old binary Office file renamed"
    )


@pytest.mark.parametrize(
    ("suffix", "member"),
    [(".xlsx", "xl/workbook.xml"), (".pptx", "ppt/presentation.xml")],
)
def test_malformed_xlsx_and_pptx_get_a_reason(tmp_path: Path, suffix: str, member: str) -> None:
    broken = make_zip(
        tmp_path / f"broken{suffix}", {member: "<not-closed", "[Content_Types].xml": "x"}
    )
    assert refusal(broken).startswith(f"not a valid {suffix[1:].upper()}")
    assert refusal(make_zip(tmp_path / f"empty{suffix}", {"a.txt": "x"})) == (
        f"not a valid {suffix[1:].upper()} (no {member})"
    )


def test_epub_with_a_broken_package_document_gets_a_reason(tmp_path: Path) -> None:
    container = (
        '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="content.opf"/></rootfiles></container>'
    )
    path = make_zip(
        tmp_path / "b.epub", {"META-INF/container.xml": container, "content.opf": "<package"}
    )
    assert refusal(path).startswith("not a valid EPUB (damaged package document")


def test_epub_entity_expansion_bomb_is_refused_unexpanded(tmp_path: Path) -> None:
    entities = '<!ENTITY e0 "lol">' + "".join(
        f'<!ENTITY e{i} "{f"&e{i - 1};" * 10}">' for i in range(1, 10)
    )
    laughs = (
        f'<?xml version="1.0"?><!DOCTYPE c [{entities}]>'
        '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="&e9;"/></rootfiles></container>'
    )
    path = make_zip(tmp_path / "laughs.epub", {"META-INF/container.xml": laughs})
    # The entities are never expanded: the container is refused as damaged, not read.
    assert refusal(path).startswith("not a valid EPUB (damaged container")


# --------------------------------------------------------------------------- HTML


def test_html_nested_beyond_the_depth_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    depth = MAX_HTML_DEPTH + 1
    path = tmp_path / "deep.html"
    path.write_text("<div>" * depth + "<p>bottom text</p>" + "</div>" * depth)
    assert refusal(path) == f"refused: tags nested more than {MAX_HTML_DEPTH:,} deep"


def test_deep_but_bounded_html_is_read_without_recursion(tmp_path: Path) -> None:
    depth = 3000  # far deeper than the interpreter's recursion limit
    path = tmp_path / "deep.html"
    unclosed = "<p>para" * 20_000  # paragraphs close each other: they do not nest
    path.write_text("<div>" * depth + "<p>bottom text</p>" + unclosed + "</div>" * depth)
    doc = read(path)
    assert doc.text.startswith("bottom text") and doc.text.count("para") == 20_000


def test_html_reading_stops_when_its_time_budget_is_spent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "big.html"
    path.write_text("".join(f"<p>paragraph {i}</p>" for i in range(20_000)))
    with caplog.at_level(logging.WARNING, logger="micro_rag_mcp.ingest.readers"):
        doc = read_html(path, time_budget=0.0)
    assert "paragraph 0" in doc.text and "paragraph 19999" not in doc.text
    assert any("time budget" in r.getMessage() for r in caplog.records)


# --------------------------------------------------------------------------- CSV


def test_csv_with_one_huge_field_gets_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    path.write_bytes(b"a,b\n" + b"x" * (11 * MIB) + b",y\n")
    assert "field larger than field limit" in refusal(path)


def test_csv_with_one_huge_line_of_fields_keeps_a_bounded_row(tmp_path: Path) -> None:
    columns = 200_000
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"h{i}" for i in range(columns)) + "\n" + ",".join("v" * columns))
    doc = read(path)
    assert doc.text.count("; ") == MAX_COLUMNS - 1
    assert doc.rows == ((0, 2),)


# --------------------------------------------------------------------------- notebooks


def test_notebook_with_huge_base64_outputs_reads_only_its_text(tmp_path: Path) -> None:
    image = base64.b64encode(bytes(15 * MIB)).decode()
    output = {"output_type": "display_data", "data": {"image/png": image}, "metadata": {}}
    path = make_ipynb(tmp_path / "plots.ipynb", [code_cell("plot(x)", [output] * 2)])
    assert path.stat().st_size > 40 * MIB
    doc = read(path)
    assert doc.text == "plot(x)"


def test_notebook_that_is_not_json_or_has_no_cells_gets_a_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ipynb"
    bad.write_text('{"cells": [')
    assert refusal(bad).startswith("not a valid notebook (bad JSON")
    odd = tmp_path / "odd.ipynb"
    odd.write_text(json.dumps({"cells": "nope"}))
    assert refusal(odd) == "not a valid notebook (no list of cells)"
    assert read(make_ipynb(tmp_path / "ok.ipynb", [code_cell("x")])).text == "x"
    assert notebook_json([])  # the factory itself writes valid JSON


# --------------------------------------------------------------------------- a whole folder


def test_every_hostile_file_costs_only_itself(engine: Engine, data: Path) -> None:
    make_bomb(data / "bomb.xlsx", "xl/workbook.xml", 20 * MIB)
    encrypt(make_pptx(data / "plain.pptx", [Slide("x")]), data / "locked.pptx")
    (data / "plain.pptx").unlink()
    make_zip(data / "broken.pptx", {"ppt/presentation.xml": "<oops"})
    (data / "deep.html").write_text("<div>" * 50_000 + "deep words" + "</div>" * 50_000)
    (data / "page.html").write_text("<h1>Fine</h1><p>A page like any other.</p>")
    (data / "huge.csv").write_bytes(b"a\n" + b"x" * (11 * MIB) + b"\n")
    make_xlsx(data / "good.xlsx", {"S": [["Name"], ["Ada"]]})
    report = engine.reindex()
    failed = dict(report.files_failed)
    assert set(failed) == {"bomb.xlsx", "locked.pptx", "broken.pptx", "huge.csv", "deep.html"}
    assert "zip bomb" in failed["bomb.xlsx"] and "password" in failed["locked.pptx"]
    assert "nested" in failed["deep.html"] and "field limit" in failed["huge.csv"]
    assert report.files_added == 2  # the ordinary page and the good sheet
    assert engine.search("Ada", 1, 0.0).hits[0].chunk.locator == 'sheet "S" row 2'
