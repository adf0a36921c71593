"""The PowerPoint reader reads the deck's XML itself: slide order, shapes, broken parts."""

from __future__ import annotations

import re
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers import Document, read_document
from micro_rag_mcp.text.chunking import Locator
from tests.formatfactory import Slide, make_pptx


def read(path: Path) -> Document:
    return read_document(path, max_bytes=10**8)


def where(doc: Document, needle: str) -> tuple[str | None, str | None]:
    start = doc.text.index(needle)
    locate = Locator(doc.text, sections=doc.sections, locators=doc.locators)
    return locate.section(start), locate.where(start, start + len(needle))


def rewrite(path: Path, change: Callable[[str, bytes], bytes | None]) -> Path:
    """``path`` with each member replaced by ``change(name, data)`` (None leaves it out)."""
    with zipfile.ZipFile(path) as source:
        members = [(info.filename, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in members:
            changed = change(name, data)
            if changed is not None:
                target.writestr(name, changed)
    return path


def test_slides_come_in_the_presentations_order_not_the_parts(tmp_path: Path) -> None:
    path = make_pptx(
        tmp_path / "deck.pptx",
        [Slide("First made", body=["alpha"]), Slide("Second made", body=["beta"])],
    )

    def swap(name: str, data: bytes) -> bytes:
        if name != "ppt/presentation.xml":
            return data
        ids = re.findall(rb"<p:sldId [^>]*/>", data)
        return data.replace(ids[0] + ids[1], ids[1] + ids[0])

    doc = read(rewrite(path, swap))
    assert doc.text.index("beta") < doc.text.index("alpha")
    assert where(doc, "beta") == ("Second made", "slide 1")
    assert where(doc, "alpha") == ("First made", "slide 2")


def test_line_breaks_nested_groups_and_table_cells_are_read(tmp_path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    slide.shapes.title.text = "Layout\vsecond title line"
    outer = slide.shapes.add_group_shape()
    inner = outer.shapes.add_group_shape()
    inner.shapes.add_textbox(Inches(1), Inches(1), Inches(1), Inches(1)).text = "deep box"
    table = slide.shapes.add_table(2, 3, Inches(1), Inches(3), Inches(4), Inches(1)).table
    table.cell(0, 0).merge(table.cell(0, 1))
    table.cell(0, 0).text = "wide head"
    table.cell(0, 2).text = "narrow"
    table.cell(1, 2).text = " last "
    path = tmp_path / "shapes.pptx"
    deck.save(str(path))
    doc = read(path)
    assert "Layout\nsecond title line" in doc.text
    assert where(doc, "deep box") == ("Layout", "slide 1")
    assert "wide head |  | narrow\n |  | last" in doc.text


def test_a_deck_without_core_properties_has_no_title(tmp_path: Path) -> None:
    path = make_pptx(tmp_path / "bare.pptx", [Slide("Agenda", body=["items"])])

    def drop_core(name: str, data: bytes) -> bytes | None:
        if name == "docProps/core.xml":
            return None
        if name == "_rels/.rels":  # python-pptx titled such a deck "PowerPoint Presentation"
            return re.sub(rb"<Relationship [^>]*core-properties\"[^>]*/>", b"", data)
        return data

    doc = read(rewrite(path, drop_core))
    assert doc.title == "" and "Agenda\n\nitems" in doc.text


def test_a_damaged_slide_is_named_in_a_one_line_reason(tmp_path: Path) -> None:
    path = make_pptx(tmp_path / "deck.pptx", [Slide("One"), Slide("Two")])
    rewrite(path, lambda name, data: data[:150] if name == "ppt/slides/slide2.xml" else data)
    with pytest.raises(ReadError) as info:
        read(path)
    reason = str(info.value)
    assert reason.startswith("not a valid PPTX: damaged XML in ppt/slides/slide2.xml (")
    assert "\n" not in reason


def test_a_missing_slide_part_gets_a_reason(tmp_path: Path) -> None:
    path = make_pptx(tmp_path / "deck.pptx", [Slide("One"), Slide("Two")])
    rewrite(path, lambda name, data: None if name == "ppt/slides/slide2.xml" else data)
    with pytest.raises(ReadError, match=r"^not a valid PPTX \(no ppt/slides/slide2\.xml\)$"):
        read(path)


def test_reading_a_deck_needs_neither_python_pptx_nor_pillow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_pptx(tmp_path / "deck.pptx", [Slide("Plan", body=["step"], notes="aside")])
    for module in [name for name in sys.modules if name.split(".")[0] in ("pptx", "PIL")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "pptx", None)  # an import of it now fails
    monkeypatch.setitem(sys.modules, "PIL", None)
    doc = read(path)
    assert in_text(doc, "Plan", "step", "Notes: aside")


def in_text(doc: Document, *needles: str) -> bool:
    return all(needle in doc.text for needle in needles)
