"""Sections and locators: where a passage is, in the file's own terms."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from micro_rag_mcp.ingest.files import extract_chunks
from micro_rag_mcp.ingest.isolation import IsolatedReader
from micro_rag_mcp.ingest.readers import Document, read_document
from micro_rag_mcp.ingest.readers.document import DocumentBuilder, HeadingPath
from micro_rag_mcp.ingest.readers.text import markdown_sections
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.text.chunking import Locator
from tests.docfactory import Heading, Table, make_bare_docx, make_docx
from tests.settingskit import make_settings

LIMIT = 10**8


def stored(index: Path) -> list[tuple[str, str | None, str | None]]:
    """(text, section, locator) of every chunk, in file and chunk order."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    rows = conn.execute(
        "SELECT c.text, c.section, c.locator FROM chunks c JOIN files f ON f.id = c.file_id "
        "ORDER BY f.path, c.chunk_index"
    ).fetchall()
    conn.close()
    return [(str(t), s, loc) for t, s, loc in rows]


# --------------------------------------------------------------------------- Locator


def test_section_is_the_heading_path_in_force_at_an_offset() -> None:
    locate = Locator("x" * 100, sections=((10, "A"), (40, "A › B"), (70, "")))
    assert locate.section(0) is None
    assert locate.section(10) == "A"
    assert locate.section(39) == "A"
    assert locate.section(55) == "A › B"
    assert locate.section(80) is None  # "" ends the section


def test_locator_names_the_rows_a_passage_covers_under_its_sheet() -> None:
    text = "r1\nr2\nr3\n\ns1\ns2"
    rows = ((0, 2), (3, 3), (6, 4), (10, 2), (13, 3))
    locate = Locator(text, locators=((0, 'sheet "Q3"'), (10, 'sheet "Q4"')), rows=rows)
    assert locate.where(0, 8) == 'sheet "Q3" rows 2–4'
    assert locate.where(3, 5) == 'sheet "Q3" row 3'
    assert locate.where(10, 15) == 'sheet "Q4" rows 2–3'


def test_rows_of_an_earlier_locator_do_not_leak_into_the_next() -> None:
    text = "r1\n\nslide text\nr9"
    locate = Locator(text, locators=((0, "a"), (4, "b")), rows=((0, 1), (15, 9)))
    assert locate.where(4, 14) == "b"
    assert locate.where(4, 17) == "b row 9"


def test_rows_without_a_locator_are_named_alone() -> None:
    locate = Locator("a\nb\nc", rows=((0, 2), (2, 3), (4, 4)))
    assert locate.where(2, 5) == "rows 3–4"
    assert Locator("plain").where(0, 5) is None


# --------------------------------------------------------------------------- builder


def test_heading_path_pops_to_the_level_of_each_new_heading() -> None:
    path = HeadingPath()
    assert path.enter(1, "Guide") == "Guide"
    assert path.enter(2, " Install\n now ") == "Guide › Install now"
    assert path.enter(3, "Linux") == "Guide › Install now › Linux"
    assert path.enter(2, "Use") == "Guide › Use"
    assert path.enter(1, "Appendix") == "Appendix"


def test_builder_marks_fall_where_the_next_block_starts() -> None:
    b = DocumentBuilder()
    b.section("Intro")
    b.add("First block.")
    b.locator("slide 2", hard=True)
    b.add("   ")  # blank: skipped, the mark waits for real text
    b.add("Second block.")
    b.add("row one", sep="\n", row=7)
    b.section("Never used")  # nothing follows it
    doc = b.build("T")
    assert doc.text == "First block.\n\nSecond block.\nrow one"
    second = doc.text.index("Second")
    assert doc.sections == ((0, "Intro"),)
    assert doc.locators == ((second, "slide 2"),)
    assert doc.breaks == (second,)
    assert doc.rows == ((doc.text.index("row one"), 7),)
    assert doc.title == "T"


# --------------------------------------------------------------------------- Markdown


def test_markdown_headings_give_sections_but_not_in_code_or_front_matter() -> None:
    text = (
        "---\ntitle: Notes\n---\n"
        "# Guide\n\nIntro.\n\n## Install ##\n\n```sh\n# not a heading\n```\n\n"
        "Results\n-------\n\n- item\n---\n\n# Two\n"
    )
    marks = markdown_sections(text)
    assert [label for _, label in marks] == [
        "Guide",
        "Guide › Install",
        "Guide › Results",
        "Two",
    ]
    assert [text[offset : offset + 4] for offset, _ in marks] == ["# Gu", "## I", "Resu", "# Tw"]


def test_markdown_file_is_read_with_its_sections(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text("Preface.\n\n# Setup\n\nSteps.\n\n## Linux\n\napt install\n")
    doc = read_document(path, max_bytes=LIMIT)
    locate = Locator(doc.text, sections=doc.sections)
    assert locate.section(0) is None
    assert locate.section(doc.text.index("Steps")) == "Setup"
    assert locate.section(doc.text.index("apt")) == "Setup › Linux"


# --------------------------------------------------------------------------- DOCX


def test_docx_heading_styles_give_sections(tmp_path: Path) -> None:
    path = make_docx(
        tmp_path / "report.docx",
        [
            Heading("Report", 0),  # the Title style is the document's title, not a section
            "Opening words.",
            Heading("Chapter 2", 1),
            "Chapter text.",
            Heading("Results", 2),
            Table([["k", "v"]]),
            Heading("Chapter 3", 1),
            "Closing words.",
        ],
    )
    doc = read_document(path, max_bytes=LIMIT)
    locate = Locator(doc.text, sections=doc.sections)
    assert locate.section(doc.text.index("Opening")) is None
    assert locate.section(doc.text.index("Chapter 2")) == "Chapter 2"
    assert locate.section(doc.text.index("Chapter text")) == "Chapter 2"
    assert locate.section(doc.text.index("k | v")) == "Chapter 2 › Results"
    assert locate.section(doc.text.index("Closing")) == "Chapter 3"


def test_docx_outline_level_makes_a_heading_without_a_heading_style(tmp_path: Path) -> None:
    body = (
        '<w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:r><w:t>Part One</w:t></w:r></w:p>'
        "<w:p><w:r><w:t>Body text.</w:t></w:r></w:p>"
        '<w:p><w:pPr><w:outlineLvl w:val="9"/></w:pPr><w:r><w:t>Not a heading</w:t></w:r></w:p>'
    )
    doc = read_document(make_bare_docx(tmp_path / "bare.docx", body), max_bytes=LIMIT)
    assert doc.sections == ((0, "Part One"),)


# --------------------------------------------------------------------------- indexer


def test_each_chunk_gets_the_section_in_force_at_its_start(tmp_path: Path) -> None:
    text = "# Alpha\n\n" + "alpha words here. " * 20 + "\n\n# Beta\n\n" + "beta words. " * 20
    doc = Document(text, sections=markdown_sections(text))
    settings = make_settings(tmp_path, chunk_size=200, chunk_overlap=50)
    _, chunks = extract_chunks(doc, tmp_path / "a.md", settings)
    assert chunks[0].section == "Alpha"
    assert chunks[-1].section == "Beta"
    for c in chunks:
        expected = "Beta" if c.char_start >= text.index("# Beta") else "Alpha"
        assert c.section == expected
        assert c.locator is None and c.line_start is not None


def test_rows_stay_whole_without_overlap_and_chunks_never_span_a_break(tmp_path: Path) -> None:
    b = DocumentBuilder()
    for sheet, count in (("Q3", 40), ("Q4", 5)):
        b.locator(f'sheet "{sheet}"', hard=True)
        for row in range(2, 2 + count):
            b.add(f"Name: person {row}; Team: {sheet}", sep="\n", row=row)
    doc = b.build()
    settings = make_settings(tmp_path, chunk_size=200, chunk_overlap=50)
    _, chunks = extract_chunks(doc, tmp_path / "t.xlsx", settings)
    lines = [line for c in chunks for line in c.text.split("\n")]
    assert len(lines) == 45  # every row once: whole, and in no two chunks
    assert all(line.startswith("Name: person") for line in lines)
    first_rows = chunks[0].text.count("\n") + 1
    assert first_rows > 1
    assert chunks[0].locator == f'sheet "Q3" rows 2–{1 + first_rows}'
    assert chunks[-1].locator == 'sheet "Q4" rows 2–6'
    assert all(c.line_start is None for c in chunks)
    assert not any("Q3" in c.text and "Q4" in c.text for c in chunks)


def test_a_table_without_sheets_cites_its_rows_not_lines(tmp_path: Path) -> None:
    b = DocumentBuilder()
    for row in (2, 3):
        b.add(f"Name: person {row}", sep="\n", row=row)
    _, chunks = extract_chunks(b.build(), tmp_path / "t.csv", make_settings(tmp_path))
    assert [(c.locator, c.line_start, c.line_end) for c in chunks] == [("rows 2–3", None, None)]


def test_sections_and_locators_are_stored_and_returned_by_search(
    engine: Engine, data: Path
) -> None:
    (data / "guide.md").write_text("# Setup\n\n## Linux\n\nRun the zeppelin installer.\n")
    engine.reindex()
    assert stored(data / "index") == [
        ("# Setup\n\n## Linux\n\nRun the zeppelin installer.", "Setup", None)
    ]
    hit = engine.search("zeppelin", 1, 0.0).hits[0]
    assert hit.chunk.section == "Setup" and hit.chunk.locator is None


# --------------------------------------------------------------------------- isolation


def test_sections_locators_rows_and_breaks_cross_the_process_boundary(tmp_path: Path) -> None:
    md = tmp_path / "n.md"
    md.write_text("# One\n\ntext\n\n## Two\n\nmore\n")
    docx = make_docx(tmp_path / "d.docx", [Heading("Top", 1), "words"])
    with IsolatedReader(tmp_path, timeout_s=60) as reader:
        for path in (md, docx):
            doc = reader.read(path, max_bytes=LIMIT)
            assert doc == read_document(path, max_bytes=LIMIT)
            assert doc.sections


def test_a_passage_across_numbered_locators_names_them_all() -> None:
    locate = Locator("a\n\nb\n\nc", locators=((0, "cell 1"), (3, "cell 2"), (6, "cell 3")))
    assert locate.where(0, 7) == "cells 1–3"
    assert locate.where(3, 4) == "cell 2"
    mixed = Locator("a\n\nb", locators=((0, "cell 1"), (3, 'sheet "X"')))
    assert mixed.where(0, 4) == "cell 1"


def test_pdf_outline_entries_give_each_page_its_section(tmp_path: Path) -> None:
    import io

    from pypdf import PdfReader, PdfWriter

    from tests.docfactory import pdf_bytes

    pages = ["Cover words.", "Intro words.", "More intro.", "Method words.", "Results words."]
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(pages))))
    part = writer.add_outline_item(title="Part One", page_number=1)
    writer.add_outline_item(title="Method", page_number=3, parent=part)
    writer.add_outline_item(title="Results", page_number=4)
    path = tmp_path / "outlined.pdf"
    with path.open("wb") as out:
        writer.write(out)
    doc = read_document(path, max_bytes=LIMIT)
    locate = Locator(doc.text, doc.page_starts, sections=doc.sections)
    assert [locate.section(start) for start in doc.page_starts] == [
        None,
        "Part One",
        "Part One",
        "Part One › Method",
        "Results",
    ]


# --------------------------------------------------------------------------- code

CODE = '''import os


class Catalog:
    """The catalog."""

    def fetch(self, ids):
        return [zeppelin_row(i) for i in ids]


async def main():
    pass
'''


def test_code_definitions_give_sections_nested_one_level_in_a_class() -> None:
    from micro_rag_mcp.ingest.readers.code import code_sections

    marks = code_sections(CODE)
    assert [label for _, label in marks] == [
        "class Catalog",
        "class Catalog › def fetch",
        "def main",
    ]
    assert [CODE[offset:].split("\n")[0].strip() for offset, _ in marks] == [
        "class Catalog:",
        "def fetch(self, ids):",
        "async def main():",
    ]
    other = "export default async function load(x) {}\nfunc Run() {}\npub fn parse() {}\n"
    assert [label for _, label in code_sections(other)] == [
        "function load",
        "func Run",
        "fn parse",
    ]


def test_a_code_passage_cites_its_lines_and_enclosing_definition(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "catalog.py").write_text(CODE + "\n" * 3 + "x = 1\n" * 400)
    doc = read_document(data / "catalog.py", max_bytes=LIMIT)
    settings = make_settings(data, chunk_size=120, chunk_overlap=20)
    _, chunks = extract_chunks(doc, data / "catalog.py", settings)
    fetch = next(c for c in chunks if "zeppelin_row" in c.text)
    assert fetch.section in {"class Catalog", "class Catalog › def fetch"}
    assert fetch.line_start is not None and fetch.line_start <= 8 <= (fetch.line_end or 0)
    assert chunks[0].section is None  # the imports come before any definition
