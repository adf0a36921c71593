"""Reader guards that see what the parser sees: self-closed tags, DTD subsets, entities."""

from __future__ import annotations

from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers import read_document
from micro_rag_mcp.ingest.readers.web import MAX_HTML_DEPTH, nesting_depth
from tests.docfactory import make_bare_docx
from tests.formatfactory import make_epub
from tests.hostilefactory import make_div_flood_html

LIMIT = 10**9
_XXE = '<!DOCTYPE html [<!ENTITY xxe SYSTEM "file:///etc/hostname">]>'


def test_a_flood_of_self_closed_divs_is_refused_as_the_nesting_it_is(tmp_path: Path) -> None:
    page = make_div_flood_html(tmp_path / "flood.html", divs=100_000)
    with pytest.raises(ReadError) as info:
        read_document(page, max_bytes=LIMIT)
    assert str(info.value) == f"refused: tags nested more than {MAX_HTML_DEPTH:,} deep"


def test_self_closed_divs_count_as_nesting_and_svg_paths_do_not() -> None:
    assert nesting_depth("<body>" + "<div/>" * 50 + "</body>", 10_000) == 51
    svg = "<body><svg>" + '<path d="M0 0"/>' * 20_000 + "</svg><p>after</p></body>"
    assert nesting_depth(svg, 10_000) == 2


def test_a_page_with_thousands_of_svg_paths_is_read(tmp_path: Path) -> None:
    page = tmp_path / "chart.html"
    page.write_text("<body><svg>" + "<path/>" * 20_000 + "</svg><p>after the chart</p></body>")
    assert read_document(page, max_bytes=LIMIT).text == "after the chart"


def test_an_html_doctype_subset_leaves_no_text_behind(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(f"{_XXE}<html><body><p>marker alpaca &xxe; end</p></body></html>")
    text = read_document(page, max_bytes=LIMIT).text
    assert "]>" not in text
    assert text.startswith("marker alpaca")


def test_an_epub_chapter_doctype_subset_leaves_no_text_behind(tmp_path: Path) -> None:
    book = make_epub(tmp_path / "book.epub", [("One", "<p>marker alpaca</p>")])
    import zipfile

    patched = tmp_path / "patched.epub"
    with zipfile.ZipFile(book) as src, zipfile.ZipFile(patched, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".xhtml"):
                data = data.replace(b"?><html", f"?>{_XXE}<html".encode())
            dst.writestr(info, data)
    text = read_document(patched, max_bytes=LIMIT).text
    assert "]>" not in text
    assert "marker alpaca" in text


def test_docx_text_after_an_unresolved_entity_is_kept(tmp_path: Path) -> None:
    doc = make_bare_docx(
        tmp_path / "entity.docx",
        "<w:p><w:r><w:t>marker alpaca &xxe; end</w:t></w:r></w:p>",
        doctype='<!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file:///etc/hostname">]>',
    )
    text = read_document(doc, max_bytes=LIMIT).text
    assert text.split() == ["marker", "alpaca", "end"]


def test_ascii_text_with_a_few_stray_bytes_is_not_read_as_another_alphabet(
    tmp_path: Path,
) -> None:
    body = ("The quarterly report covers revenue, costs and the outlook. " * 40).encode()
    note = tmp_path / "note.txt"
    note.write_bytes(body[:1000] + b"\xff\xfe\x92" + body[1000:2000] + b"\x81" + body[2000:])
    text = read_document(note, max_bytes=LIMIT).text
    letters = {ch for ch in text if ch.isalpha() and not ch.isascii()}
    assert letters <= {"ÿ", "þ"}  # cp1252 for the stray bytes, no Cyrillic or Greek
    assert text.count("quarterly report") == 40


def test_a_budget_made_within_another_ends_by_its_end() -> None:
    from micro_rag_mcp.ingest.readers.guards import Budget, within

    with within(Budget(3600.0)):
        assert not Budget(60.0).spent()
        with within(Budget(-1.0)):  # an outer budget already used up
            assert Budget(60.0).spent()
        assert not Budget(60.0).spent()
    assert not Budget(60.0).spent()
