"""Every document format on small real files: text in order, sections and locators."""

from __future__ import annotations

import base64
import datetime
from pathlib import Path

import pytest

from micro_rag_mcp.core.settings import CODE_EXTS, DOC_EXTS
from micro_rag_mcp.ingest.readers import READERS, Document, read_document
from micro_rag_mcp.text.chunking import Locator
from tests.formatfactory import (
    Slide,
    code_cell,
    make_epub,
    make_ipynb,
    make_pptx,
    make_xlsx,
    md_cell,
)

LIMIT = 10**8


def read(path: Path) -> Document:
    return read_document(path, max_bytes=LIMIT)


def where(doc: Document, needle: str) -> tuple[str | None, str | None]:
    """(section, locator) of the passage that is exactly ``needle``."""
    start = doc.text.index(needle)
    locate = Locator(
        doc.text, doc.page_starts, sections=doc.sections, locators=doc.locators, rows=doc.rows
    )
    return locate.section(start), locate.where(start, start + len(needle))


def in_order(text: str, *needles: str) -> bool:
    positions = [text.index(n) for n in needles]
    return positions == sorted(positions)


def test_every_listed_suffix_has_a_reader_and_no_other() -> None:
    assert set(READERS) == set(DOC_EXTS) | set(CODE_EXTS)


# --------------------------------------------------------------------------- HTML

PAGE = """<!doctype html><html><head><meta charset="windows-1252"><title>Field guide</title>
<style>p { color: red }</style><script>var tracking = 1;</script></head><body>
<header><a href="/">Home</a> Site banner</header>
<nav><ul><li>Menu item</li></ul></nav>
<main><article><header><h1>Chapter 2</h1></header>
<p>Opening   <b>bold</b>text
 here.<br>Second line.</p>
<h2>Results</h2>
<table><tr><th>Name</th><th>Team</th></tr><tr><td>Ada</td><td>Core</td></tr></table>
<div hidden>secret</div><p aria-hidden="true">also hidden</p>
<pre>  code
    indented</pre><ul><li>one</li><li>caf\xe9</li></ul></article></main>
<aside>Related links</aside><footer>Copyright</footer></body></html>"""


def test_html_visible_text_in_reading_order_with_heading_sections(tmp_path: Path) -> None:
    path = tmp_path / "guide.html"
    path.write_bytes(PAGE.encode("cp1252"))
    doc = read(path)
    assert doc.title == "Field guide"
    assert "Opening boldtext here.\nSecond line." in doc.text
    assert "Name | Team\nAda | Core" in doc.text
    assert "  code\n    indented" in doc.text
    assert "café" in doc.text
    assert in_order(doc.text, "Chapter 2", "Opening", "Results", "Ada", "code", "one")
    for gone in ("tracking", "color", "Site banner", "Menu item", "secret", "also hidden"):
        assert gone not in doc.text
    assert "Related links" not in doc.text and "Copyright" not in doc.text
    assert where(doc, "Opening boldtext") == ("Chapter 2", None)
    assert where(doc, "Ada | Core") == ("Chapter 2 › Results", None)


def test_htm_is_read_as_html(tmp_path: Path) -> None:
    path = tmp_path / "old.HTM"
    path.write_text("<p>Plain <i>old</i> page</p>")
    assert read(path).text == "Plain old page"


# --------------------------------------------------------------------------- CSV / TSV


def test_csv_rows_carry_their_header_and_row_numbers(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text('Name;Team;Score\nAda;Core;3\n"Bob\nSmith";Web;\n\n;;\nEve;Ops;7\n')
    doc = read(path)
    assert doc.text.split("\n") == [
        "Name: Ada; Team: Core; Score: 3",
        "Name: Bob Smith; Team: Web",
        "Name: Eve; Team: Ops; Score: 7",
    ]
    assert where(doc, "Name: Ada; Team: Core; Score: 3") == (None, "row 2")
    assert where(doc, "Name: Eve; Team: Ops; Score: 7") == (None, "row 6")
    assert where(doc, doc.text) == (None, "rows 2–6")


def test_tsv_is_split_on_tabs(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_text("City\tCountry, region\nLyon\tFrance, Rhône\n")
    assert read(path).text == "City: Lyon; Country, region: France, Rhône"


# --------------------------------------------------------------------------- XLSX


def test_xlsx_every_sheet_values_not_formulas_with_sheet_and_rows(tmp_path: Path) -> None:
    path = make_xlsx(
        tmp_path / "sales.xlsx",
        {
            "Q3": [
                ["Region", "Revenue", "Closed"],
                ["North", 1200.0, datetime.date(2024, 9, 30)],
                [],
                ["South", "=1+2", None],
            ],
            "Q4": [[None, None], ["Team", "Lead"], ["Core", "Ada"]],
            "Empty": [],
        },
        title="Sales 2024",
    )
    doc = read(path)
    assert doc.title == "Sales 2024"
    assert doc.text == (
        "Region: North; Revenue: 1200; Closed: 2024-09-30\nRegion: South\n\nTeam: Core; Lead: Ada"
    )
    assert "1+2" not in doc.text  # a formula is never read; openpyxl saved no value for it
    assert where(doc, "Region: North") == (None, 'sheet "Q3" row 2')
    assert where(doc, "Region: South") == (None, 'sheet "Q3" row 4')
    assert where(doc, "Team: Core; Lead: Ada") == (None, 'sheet "Q4" row 3')
    assert doc.breaks == (doc.text.index("Team"),)


# --------------------------------------------------------------------------- PPTX


def test_pptx_titles_frames_groups_tables_and_notes_per_slide(tmp_path: Path) -> None:
    path = make_pptx(
        tmp_path / "deck.pptx",
        [
            Slide("Roadmap", body=["Ship the reader", "Then the index"], notes="Say it slowly"),
            Slide("Numbers", grouped=["grouped box one", "grouped box two"]),
            Slide("", table=[["Quarter", "Sales"], ["Q3", "12"]], extra=["loose box"]),
        ],
    )
    doc = read(path)
    assert in_order(
        doc.text, "Roadmap", "Ship the reader", "Then the index", "Notes: Say it slowly"
    )
    assert where(doc, "Ship the reader") == ("Roadmap", "slide 1")
    assert where(doc, "grouped box two") == ("Numbers", "slide 2")
    assert where(doc, "Quarter | Sales\nQ3 | 12") == (None, "slide 3")
    assert where(doc, "loose box") == (None, "slide 3")
    assert len(doc.breaks) == 2  # a passage never spans two slides


# --------------------------------------------------------------------------- EPUB


def test_epub_chapters_in_spine_order_with_their_titles(tmp_path: Path) -> None:
    path = make_epub(
        tmp_path / "book.epub",
        [
            ("A Book", "<p>Dedication to nobody.</p>"),
            ("Chapter One", "<h1>The Start</h1><p>It began.</p><h2>A scene</h2><p>Rain.</p>"),
            ("Chapter Two", "<p>No heading here.</p>"),
        ],
        title="A Book",
    )
    doc = read(path)
    assert doc.title == "A Book"
    assert in_order(doc.text, "Dedication", "The Start", "It began.", "Rain.", "No heading")
    assert where(doc, "Dedication to nobody.") == (None, None)  # the page title is the book's
    assert where(doc, "It began.") == ("The Start", None)
    assert where(doc, "Rain.") == ("The Start › A scene", None)
    assert where(doc, "No heading here.") == ("Chapter Two", None)
    assert len(doc.breaks) == 2


# --------------------------------------------------------------------------- notebooks


def test_notebook_cells_outputs_and_headings_never_images(tmp_path: Path) -> None:
    png = base64.b64encode(b"\x89PNG" + b"\x00" * 3000).decode()
    path = make_ipynb(
        tmp_path / "analysis.ipynb",
        [
            md_cell("# Analysis\n\nWe load the data."),
            code_cell(
                "import pandas as pd\nprint(len(df))",
                [
                    {"output_type": "stream", "name": "stdout", "text": ["42\n"]},
                    {
                        "output_type": "display_data",
                        "data": {"image/png": png, "text/plain": ["<Figure size 640x480>"]},
                        "metadata": {},
                    },
                    {"output_type": "error", "ename": "KeyError", "evalue": "'x'", "traceback": []},
                ],
            ),
            md_cell("## Results\nIt works."),
            {"cell_type": "raw", "metadata": {}, "source": "raw cell"},
        ],
    )
    doc = read(path)
    assert png[:40] not in doc.text and "iVBOR" not in doc.text
    assert in_order(doc.text, "Analysis", "import pandas", "42", "<Figure", "KeyError: 'x'")
    assert where(doc, "We load the data.") == ("Analysis", "cell 1")
    assert where(doc, "print(len(df))") == ("Analysis", "cell 2")
    assert where(doc, "KeyError: 'x'") == ("Analysis", "cell 2")
    assert where(doc, "It works.") == ("Analysis › Results", "cell 3")
    assert "raw cell" not in doc.text


# --------------------------------------------------------------------------- text and code


@pytest.mark.parametrize("suffix", [".org", ".tex", ".json", ".yaml", ".yml", ".toml", ".py"])
def test_text_formats_and_code_are_read_as_lines(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"file{suffix}"
    path.write_text("first line\nsecond line\n")
    doc = read(path)
    assert doc.text == "first line\nsecond line\n"
    assert doc.sections == doc.locators == ()


def test_rst_titles_give_sections(tmp_path: Path) -> None:
    path = tmp_path / "guide.rst"
    path.write_text(
        "=======\n Guide\n=======\n\nIntro.\n\nInstall\n-------\n\nSteps.\n\n"
        "Linux\n~~~~~\n\napt.\n\nUsage\n-----\n\n::\n\n   code\n"
    )
    doc = read(path)
    assert where(doc, "Intro.") == ("Guide", None)
    assert where(doc, "apt.") == ("Guide › Install › Linux", None)
    assert where(doc, "code") == ("Guide › Usage", None)


# --------------------------------------------------------------------------- --exts


def test_exts_accepts_group_names_beside_suffixes() -> None:
    from micro_rag_mcp.options import parse_exts

    assert parse_exts("docs") == DOC_EXTS
    assert parse_exts("docs,code") == DOC_EXTS + CODE_EXTS
    assert parse_exts(".md, code, md") == (".md", *CODE_EXTS)
    assert ".py" not in parse_exts("docs")


def test_exts_names_the_groups_when_refusing(tmp_path: Path) -> None:
    from micro_rag_mcp.core.errors import ConfigError
    from micro_rag_mcp.options import parse_exts

    with pytest.raises(ConfigError, match=r"'\.exe' \(groups: docs, code"):
        parse_exts(".txt,.exe")
