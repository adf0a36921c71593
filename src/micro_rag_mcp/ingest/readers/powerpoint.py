"""PowerPoint ``.pptx``, read with the standard zip module and lxml alone.

A deck is a zip of XML parts tied together by relationships: ``ppt/presentation.xml``
lists the slides in their order (``p:sldIdLst``), each by a relationship id that
``ppt/_rels/presentation.xml.rels`` turns into a part name, and a slide's own
relationships name its notes page. Only the parts read are parsed (the presentation,
each slide, its notes, the core properties); pictures, masters, layouts and charts are
never opened. The package is vetted as a zip first (``guards.vet_zip``) and its XML parsed
without entities, network or huge-tree mode (libxml2 then refuses nesting deeper than
256), with the options python-pptx parses with, so the text is the same as the
python-pptx reader this replaced gave (compared on 75 decks, docs/benchmarks.md "The
PowerPoint reader on lxml"); python-pptx brought 26 MB, Pillow 22 of it, for
pictures this reader never decodes.
"""

from __future__ import annotations

import logging
import posixpath
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers.document import (
    Document,
    DocumentBuilder,
    clean_title,
    first_line_heading,
)
from micro_rag_mcp.ingest.readers.guards import Budget, short, vet_zip

logger = logging.getLogger(__name__)

SLIDE_TIME_BUDGET_S = 60.0
MAX_GROUP_DEPTH = 20  # shapes nested deeper in groups are left out

PRESENTATION = "ppt/presentation.xml"
_P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"
_A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
_R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_NOTES_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/notesSlide"
_CORE_REL = "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_TABLE_URI = "http://schemas.openxmlformats.org/drawingml/2006/table"


def _p(tag: str) -> str:
    return f"{{{_P_NS}}}{tag}"


def _a(tag: str) -> str:
    return f"{{{_A_NS}}}{tag}"


_SP, _GROUP, _FRAME = _p("sp"), _p("grpSp"), _p("graphicFrame")
# The elements of a shape tree that are shapes; others (mc:AlternateContent) are passed.
_SHAPES = frozenset({_SP, _GROUP, _FRAME, _p("cxnSp"), _p("pic"), _p("contentPart")})
_PARAGRAPH, _RUN, _FIELD, _BREAK, _T = _a("p"), _a("r"), _a("fld"), _a("br"), _a("t")


def read_pptx(path: Path, *, time_budget: float = SLIDE_TIME_BUDGET_S) -> Document:
    """Each slide's title, text frames, grouped shapes and tables, then its notes.

    Every shape's text is read whole, the title placeholder's too. A passage names its
    slide and never spans two; the section is the title's first line, shortened.
    Pictures, charts and media are left out.
    """
    vet_zip(path, "PPTX", PRESENTATION)
    budget = Budget(time_budget)
    builder = DocumentBuilder()
    with zipfile.ZipFile(path) as archive:
        deck = _Package(archive)
        for number, slide_name in enumerate(deck.slide_names(), 1):
            if budget.spent():
                logger.warning("%s: stopped before slide %d (time budget)", path, number)
                break
            _add_slide(builder, deck, slide_name, f"slide {number}")
        title = deck.title(path)
    return builder.build(title)


def _add_slide(builder: DocumentBuilder, deck: _Package, name: str, locator: str) -> None:
    tree = _tree(deck.xml(name))
    title = _title_shape(tree)
    title_text = _frame_text(title.find(_p("txBody"))) if title is not None else ""
    builder.locator(locator, hard=True)
    builder.section(first_line_heading(title_text))
    builder.add(title_text)  # whole: a deck may keep its body in the title placeholder
    skip = _shape_id(title) if title is not None else None
    for text in _shape_texts(tree, skip):
        builder.add(text)
    notes_name = deck.related(name, _NOTES_REL)
    if notes_name is not None:
        notes = _notes_text(_tree(deck.xml(notes_name)))
        if notes is not None and notes.strip():
            builder.add(f"Notes: {notes}")


class _Package:
    """The parts of one open deck, found through their relationships."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self._archive = archive
        self._names = set(archive.namelist())

    def xml(self, name: str) -> Any:
        """The parsed part ``name``; ``ReadError`` when it is missing or damaged."""
        if name not in self._names:
            raise ReadError(f"not a valid PPTX (no {name})")
        return _parse(self._archive.read(name), name)

    def slide_names(self) -> Iterator[str]:
        """The slides' part names in the order the presentation lists them."""
        root = self.xml(PRESENTATION)
        if root.tag != _p("presentation"):
            raise ReadError(f"not a valid PPTX ({PRESENTATION} is not a presentation)")
        targets = self._relationships(PRESENTATION)
        listed = root.find(_p("sldIdLst"))
        for entry in listed.iterchildren(_p("sldId")) if listed is not None else ():
            rid = entry.get(_R_ID)
            if rid not in targets:
                raise ReadError(f"not a valid PPTX (slide {rid!r} has no relationship)")
            yield targets[rid][1]

    def related(self, name: str, kind: str) -> str | None:
        """The part that part ``name`` relates to by relationship type ``kind``, if any."""
        return next((t for k, t in self._relationships(name).values() if k == kind), None)

    def title(self, path: Path) -> str:
        """The core properties' title, cleaned; "" without them."""
        try:
            core = self.related("", _CORE_REL)
            title = self.xml(core).find(_DC_TITLE) if core is not None else None
        except ReadError as e:  # the title is a nicety: never lose the text over it
            logger.warning("%s: title could not be read: %s", path, e)
            return ""
        return clean_title(title.text if title is not None else "")

    def _relationships(self, name: str) -> dict[str, tuple[str, str]]:
        """Part ``name``'s internal relationships: id -> (type, target part name)."""
        folder, base = posixpath.split(name)
        rels = posixpath.join(folder, "_rels", f"{base}.rels")
        if rels not in self._names:
            return {}
        found: dict[str, tuple[str, str]] = {}
        for rel in self.xml(rels).iterchildren(_REL):
            target = rel.get("Target")
            if rel.get("TargetMode") == "External" or not target or rel.get("Id") is None:
                continue
            part = posixpath.normpath(posixpath.join("/", folder, target)).lstrip("/")
            found[rel.get("Id")] = (rel.get("Type", ""), part)
        return found


def _parse(data: bytes, name: str) -> Any:
    from lxml import etree

    # python-pptx's options (blank text between elements dropped), and no network.
    parser = etree.XMLParser(
        remove_blank_text=True, resolve_entities=False, no_network=True, huge_tree=False
    )
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        raise ReadError(f"not a valid PPTX: damaged XML in {name} ({short(e)})") from e


def _tree(part: Any) -> Any:
    """A slide's (or notes page's) shape tree; an empty one when it has none."""
    found = part.find(f"{_p('cSld')}/{_p('spTree')}")
    return found if found is not None else ()


def _shapes(tree: Any) -> Iterator[Any]:
    return (child for child in tree if child.tag in _SHAPES)


def _placeholder(shape: Any) -> Any:
    """A shape's ``p:ph`` (under its first child's ``p:nvPr``), None when it is no placeholder."""
    head = next(iter(shape), None)
    return head.find(f"{_p('nvPr')}/{_p('ph')}") if head is not None else None


def _title_shape(tree: Any) -> Any:
    """The first top-level placeholder with index 0 (the title), if it is a text shape."""
    for shape in _shapes(tree):
        ph = _placeholder(shape)
        if ph is not None and _number(ph.get("idx", "0")) == 0:
            return shape if shape.tag == _SP else None
    return None


def _shape_id(shape: Any) -> str | None:
    head = next(iter(shape), None)
    props = head.find(_p("cNvPr")) if head is not None else None
    value = props.get("id") if props is not None else None
    number = _number(value)
    return str(number) if number is not None else value


def _number(value: str | None) -> int | None:
    """An attribute's whole number (python-pptx reads ``"07"`` as 7); None if it is none."""
    return int(value) if value is not None and value.strip().isdigit() else None


def _shape_texts(tree: Any, skip: str | None) -> Iterator[str]:
    """Text of each shape in order, looking into groups (without recursion)."""
    stack: list[tuple[Any, int]] = [(shape, 0) for shape in reversed(list(_shapes(tree)))]
    while stack:
        shape, depth = stack.pop()
        if skip is not None and _shape_id(shape) == skip:
            continue
        if shape.tag == _GROUP:
            if depth < MAX_GROUP_DEPTH:
                stack.extend((child, depth + 1) for child in reversed(list(_shapes(shape))))
        elif shape.tag == _FRAME:
            table = _table(shape)
            if table is not None:
                yield table
        elif shape.tag == _SP:
            yield _frame_text(shape.find(_p("txBody")))


def _table(frame: Any) -> str | None:
    """A table's rows, cells joined by `` | ``; None when the frame holds no table."""
    data = frame.find(f"{_a('graphic')}/{_a('graphicData')}")
    if data is None or data.get("uri") != _TABLE_URI:
        return None
    table = data.find(_a("tbl"))
    rows = (
        " | ".join(
            _frame_text(cell.find(_a("txBody"))).strip() for cell in row.iterchildren(_a("tc"))
        )
        for row in (table.iterchildren(_a("tr")) if table is not None else ())
    )
    return "\n".join(row for row in rows if row.strip(" |"))


def _frame_text(body: Any) -> str:
    """A text body's paragraphs one a line; a line break within one is ``\\v``."""
    if body is None:
        return ""
    return "\n".join(_paragraph_text(p) for p in body.iterchildren(_PARAGRAPH))


def _paragraph_text(paragraph: Any) -> str:
    parts: list[str] = []
    for child in paragraph:
        if child.tag in (_RUN, _FIELD):
            t = child.find(_T)
            parts.append((t.text or "") if t is not None else "")
        elif child.tag == _BREAK:
            parts.append("\v")
    return "".join(parts)


def _notes_text(tree: Any) -> str | None:
    """The text of the notes page's body placeholder; None when it has none."""
    for shape in _shapes(tree):
        ph = _placeholder(shape)
        if ph is not None and ph.get("type") == "body":
            return _frame_text(shape.find(_p("txBody"))) if shape.tag == _SP else None
    return None
