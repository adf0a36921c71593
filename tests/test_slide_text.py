"""Slides read whole: a title placeholder's every line is text, its first line the section."""

from __future__ import annotations

from pathlib import Path

from micro_rag_mcp.ingest.readers import read_document
from micro_rag_mcp.text.chunking import Locator
from tests.formatfactory import Slide, make_pptx

CODES = [
    "Codes and offices",
    "Code 670: Heliophysics Science Division",
    "Code 606: Computational and Information Sciences",
    "The SEDVME project is managed out of 606",
] + [f"Code {700 + i}: Office number {i} with a long descriptive name" for i in range(20)]


def section_at(path: Path, needle: str) -> tuple[str | None, str | None]:
    doc = read_document(path, max_bytes=10**8)
    start = doc.text.index(needle)
    locate = Locator(doc.text, sections=doc.sections, locators=doc.locators)
    return locate.section(start), locate.where(start, start + len(needle))


def test_a_body_kept_in_the_title_placeholder_is_read_whole(tmp_path: Path) -> None:
    path = make_pptx(tmp_path / "offices.pptx", [Slide(title="\n".join(CODES))])
    doc = read_document(path, max_bytes=10**8)
    assert len("\n".join(CODES)) > 900
    for line in CODES:
        assert line in doc.text
    assert doc.text.count("Code 670: Heliophysics") == 1  # the title is not read twice
    assert section_at(path, "The SEDVME project") == ("Codes and offices", "slide 1")


def test_a_long_first_title_line_is_shortened_for_the_section_only(tmp_path: Path) -> None:
    long_title = "Quarterly review of " + "very " * 40 + "important numbers"
    path = make_pptx(tmp_path / "long.pptx", [Slide(title=long_title, body=["Revenue grew"])])
    doc = read_document(path, max_bytes=10**8)
    assert long_title in doc.text
    section, _ = section_at(path, "Revenue grew")
    assert section is not None and section.endswith("…") and len(section) <= 120
    assert long_title.startswith(section.removesuffix("…"))
    assert not section.removesuffix("…").endswith(" ")


def test_a_slide_without_a_title_has_no_section_even_after_a_titled_one(tmp_path: Path) -> None:
    path = make_pptx(
        tmp_path / "mixed.pptx",
        [Slide(title="Roadmap", body=["Ship it"]), Slide(body=["Untitled body text " * 10])],
    )
    assert section_at(path, "Ship it") == ("Roadmap", "slide 1")
    assert section_at(path, "Untitled body text") == (None, "slide 2")
