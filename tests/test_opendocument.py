"""OpenDocument text, spreadsheets and presentations, read like their Office counterparts."""

from __future__ import annotations

from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers import Document, read_document
from micro_rag_mcp.text.chunking import Locator
from tests.docfactory import make_zip
from tests.formatfactory import make_odf, ods_row


def read(path: Path) -> Document:
    return read_document(path, max_bytes=10**8)


def where(doc: Document, needle: str) -> tuple[str | None, str | None]:
    start = doc.text.index(needle)
    locate = Locator(doc.text, sections=doc.sections, locators=doc.locators, rows=doc.rows)
    return locate.section(start), locate.where(start, start + len(needle))


ODT_BODY = (
    '<text:h text:outline-level="1">Annual report</text:h>'
    '<text:p>Opening<text:s text:c="2"/>words<text:tab/>tabbed<text:line-break/>next line'
    "<text:note><text:note-body><text:p>a footnote</text:p></text:note-body></text:note></text:p>"
    '<text:h text:outline-level="2">Results</text:h>'
    "<text:list><text:list-item><text:p>first item</text:p></text:list-item></text:list>"
    "<table:table><table:table-row><table:table-cell><text:p>Name</text:p></table:table-cell>"
    "<table:table-cell><text:p>Team</text:p></table:table-cell></table:table-row>"
    "<table:table-row><table:table-cell><text:p>Ada</text:p></table:table-cell>"
    "<table:table-cell><text:p>Core</text:p></table:table-cell></table:table-row></table:table>"
    "<office:annotation><text:p>a comment</text:p></office:annotation>"
)


def test_odt_headings_paragraphs_lists_and_tables_in_order(tmp_path: Path) -> None:
    doc = read(make_odf(tmp_path / "report.odt", "text", ODT_BODY, title="Report 2024"))
    assert doc.title == "Report 2024"
    assert "Opening  words\ttabbed\nnext line" in doc.text
    assert "Name | Team\nAda | Core" in doc.text
    assert "comment" not in doc.text
    assert where(doc, "Opening") == ("Annual report", None)
    assert where(doc, "first item") == ("Annual report › Results", None)
    assert where(doc, "Ada | Core") == ("Annual report › Results", None)


def footnote(number: str, text: str, kind: str = "footnote") -> str:
    """A note as LibreOffice writes it: its citation, then its body's paragraphs."""
    return (
        f'<text:note text:id="ftn{number}" text:note-class="{kind}">'
        f"<text:note-citation>{number}</text:note-citation>"
        f'<text:note-body><text:p text:style-name="Footnote">{text}</text:p></text:note-body>'
        "</text:note>"
    )


def test_odt_footnotes_follow_their_paragraph_and_the_sentence_stays_whole(
    tmp_path: Path,
) -> None:
    body = (
        '<text:h text:outline-level="1">Apache Tika</text:h>'
        "<text:p>Tika is part of the Lucene"
        + footnote("1", "A rather difficult test document with a simple footnote.")
        + " project. It extracts text.</text:p>"
        "<text:p>Next paragraph"
        + footnote("i", "An endnote closes the text.", kind="endnote")
        + " here.</text:p>"
        "<table:table><table:table-row><table:table-cell><text:p>Cell"
        + footnote("2", "Note in a table cell.")
        + "</text:p></table:table-cell></table:table-row></table:table>"
        "<text:p>Last paragraph.</text:p>"
    )
    doc = read(make_odf(tmp_path / "notes.odt", "text", body))
    assert doc.text == (
        "Apache Tika\n\n"
        "Tika is part of the Lucene project. It extracts text.\n\n"
        "[1] A rather difficult test document with a simple footnote.\n\n"
        "Next paragraph here.\n\n"
        "Cell\n\n[2] Note in a table cell.\n\n"
        "Last paragraph.\n\n"
        "[i] An endnote closes the text."
    )
    assert where(doc, "[1] A rather difficult") == ("Apache Tika", None)


def test_ods_sheets_rows_and_title_rows_like_xlsx(tmp_path: Path) -> None:
    body = (
        '<table:table table:name="Cups"><table:table-header-rows>'
        + ods_row("Stanley Cups")
        + "</table:table-header-rows>"
        + ods_row("Team", "City")
        + "<table:table-row><table:table-cell><text:p>Canadiens</text:p><office:annotation>"
        + "<text:p>a comment</text:p></office:annotation></table:table-cell>"
        + "<table:table-cell><text:p>Montreal</text:p></table:table-cell></table:table-row>"
        + ods_row("", "", repeat=1048000)
        + "</table:table>"
        + '<table:table table:name="People">'
        + ods_row("Name", "Team")
        + ods_row("Ada", "Core", repeat=3)
        + "</table:table>"
    )
    doc = read(make_odf(tmp_path / "book.ods", "spreadsheet", body))
    assert where(doc, "Team: Canadiens; City: Montreal") == ("Stanley Cups", 'sheet "Cups" row 3')
    assert doc.text.count("Name: Ada; Team: Core") == 3 and "comment" not in doc.text
    assert where(doc, "Name: Ada; Team: Core") == (None, 'sheet "People" row 2')
    assert len(doc.breaks) == 1  # no passage spans two sheets


def test_ods_repeated_empty_columns_before_a_value_keep_their_place(tmp_path: Path) -> None:
    row = (
        "<table:table-row><table:table-cell><text:p>A</text:p></table:table-cell>"
        '<table:table-cell table:number-columns-repeated="2"/>'
        "<table:table-cell><text:p>D</text:p></table:table-cell>"
        '<table:table-cell table:number-columns-repeated="16000"/></table:table-row>'
    )
    data = ods_row("1", "", "", "4")
    body = f'<table:table table:name="S">{row}{data}</table:table>'
    doc = read(make_odf(tmp_path / "wide.ods", "spreadsheet", body))
    assert doc.text == "A: 1; D: 4"


def test_odp_slides_whole_titles_notes_and_tables(tmp_path: Path) -> None:
    title = "Codes and offices<text:line-break/>Code 670: Heliophysics Science Division"
    body = (
        '<draw:page draw:name="p1"><draw:frame presentation:class="title"><draw:text-box>'
        f"<text:p>{title}</text:p></draw:text-box></draw:frame>"
        '<draw:frame presentation:class="outline"><draw:text-box><text:list><text:list-item>'
        "<text:p>The SEDVME project is managed out of 606</text:p></text:list-item></text:list>"
        "</draw:text-box></draw:frame>"
        '<presentation:notes><draw:frame presentation:class="notes"><draw:text-box>'
        "<text:p>Speak slowly</text:p></draw:text-box></draw:frame></presentation:notes>"
        "</draw:page>"
        '<draw:page draw:name="p2"><draw:frame><table:table><table:table-row>'
        "<table:table-cell><text:p>Q3</text:p></table:table-cell>"
        "<table:table-cell><text:p>12</text:p></table:table-cell>"
        "</table:table-row></table:table></draw:frame></draw:page>"
    )
    doc = read(make_odf(tmp_path / "deck.odp", "presentation", body))
    assert "Codes and offices\nCode 670: Heliophysics Science Division" in doc.text
    assert where(doc, "The SEDVME project") == ("Codes and offices", "slide 1")
    assert where(doc, "Notes: Speak slowly") == ("Codes and offices", "slide 1")
    assert where(doc, "Q3 | 12") == (None, "slide 2")
    assert len(doc.breaks) == 1


def test_a_package_of_the_wrong_kind_gets_a_reason(tmp_path: Path) -> None:
    path = make_odf(tmp_path / "sheet.odt", "spreadsheet", '<table:table table:name="S"/>')
    with pytest.raises(ReadError, match=r"not a valid ODT \(no office:text body \(it holds: spr"):
        read(path)


@pytest.mark.parametrize("suffix", [".odt", ".ods", ".odp"])
def test_damaged_or_missing_content_gets_a_reason(tmp_path: Path, suffix: str) -> None:
    kind = suffix[1:].upper()
    with pytest.raises(ReadError, match=f"not a valid {kind}: damaged XML"):
        read(make_zip(tmp_path / f"broken{suffix}", {"content.xml": "<office:document-content"}))
    with pytest.raises(ReadError, match=rf"not a valid {kind} \(no content.xml\)"):
        read(make_zip(tmp_path / f"empty{suffix}", {"mimetype": "x"}))


def test_entities_are_never_expanded(tmp_path: Path) -> None:
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
        + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
        + "]><d>&i;</d>"
    )
    with pytest.raises(ReadError):
        read(make_zip(tmp_path / "bomb.odt", {"content.xml": bomb}))
