"""OpenDocument (LibreOffice): text ``.odt``, spreadsheets ``.ods``, presentations ``.odp``.

A package is a zip holding ``content.xml``; it is vetted (``guards.vet_zip``) and its XML
parsed by lxml without entities, network or huge-tree mode (libxml2 then refuses nesting
deeper than 256, which bounds the walk below). Each kind is read like its Office
counterpart: headings as sections, sheets and slides as locators. A text's footnotes
follow the paragraph that cites them and its endnotes close the text, each as
``[1] note text``, so the sentence around the anchor stays whole. A spreadsheet's
repeated rows and columns (LibreOffice writes ``number-rows-repeated="1048000"`` for the
empty rest of a sheet) are skipped when empty and expanded only to a bound otherwise.
"""

from __future__ import annotations

import logging
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers.data import MAX_COLUMNS, headers_of, row_text
from micro_rag_mcp.ingest.readers.document import (
    Document,
    DocumentBuilder,
    HeadingPath,
    clean_title,
    first_line_heading,
)
from micro_rag_mcp.ingest.readers.guards import Budget, short, vet_zip
from micro_rag_mcp.ingest.readers.tables import table_head

logger = logging.getLogger(__name__)

ODF_TIME_BUDGET_S = 60.0
MAX_REPEATED_ROWS = 1000  # a non-empty row repeated more often is kept this many times

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
}


def _q(name: str) -> str:
    """``"text:p"`` in Clark notation."""
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


_P, _H, _SPAN_S, _TAB, _BREAK = (
    _q("text:p"),
    _q("text:h"),
    _q("text:s"),
    _q("text:tab"),
    _q("text:line-break"),
)
_NOTE, _CITATION, _NOTE_BODY = _q("text:note"), _q("text:note-citation"), _q("text:note-body")
_SKIPPED = frozenset({_NOTE, _q("office:annotation"), _q("text:tracked-changes")})
_TABLE, _ROW, _CELL = _q("table:table"), _q("table:table-row"), _q("table:table-cell")
_COVERED = _q("table:covered-table-cell")
_ROWS_REPEATED, _COLS_REPEATED = (
    _q("table:number-rows-repeated"),
    _q("table:number-columns-repeated"),
)
_PAGE, _NOTES, _CLASS = _q("draw:page"), _q("presentation:notes"), _q("presentation:class")


def read_odt(path: Path, *, time_budget: float = ODF_TIME_BUDGET_S) -> Document:
    """Paragraphs, lists and tables in order; ``text:h`` headings give the sections.

    A footnote follows the block that cites it, an endnote the whole text; comments and
    tracked deletions are left out.
    """
    body, title = _open(path, "ODT", "text")
    budget = Budget(time_budget)
    headings = HeadingPath()
    builder = DocumentBuilder()
    endnotes: list[str] = []
    for element in _blocks(body):
        if budget.spent():
            logger.warning("%s: stopped early (time budget)", path)
            break
        notes: list[Any] = []
        if element.tag == _TABLE:
            builder.add(_table_text(element, notes))
        else:
            text = _inline(element, notes)
            if element.tag == _H and text.strip():
                level = element.get(_q("text:outline-level"), "1")
                builder.section(headings.enter(int(level) if level.isdigit() else 1, text))
            builder.add(text)
        for note in notes:
            text = _note_text(note)
            if note.get(_q("text:note-class")) == "endnote":
                endnotes.append(text)
            else:
                builder.add(text)
    for text in endnotes:
        builder.add(text)
    return builder.build(title)


def read_ods(path: Path, *, time_budget: float = ODF_TIME_BUDGET_S) -> Document:
    """Every sheet, each row with its header (``Name: Ada; Team: Core``), as in XLSX.

    Cells as displayed (the text the spreadsheet shows); a title row above the header is
    the section; formulas, charts and images are left out.
    """
    body, title = _open(path, "ODS", "spreadsheet")
    budget = Budget(time_budget)
    builder = DocumentBuilder()
    for sheet in body.iterchildren(_TABLE):
        name = (sheet.get(_q("table:name")) or "").replace('"', "'")
        if budget.spent():
            logger.warning("%s: stopped before sheet %r (time budget)", path, name)
            break
        builder.locator(f'sheet "{name}"', hard=True)
        head, rows = table_head(_sheet_rows(sheet))
        if head is None:
            continue
        headers = headers_of(head.header)
        builder.section(head.title)
        sep = "\n\n"
        for count, (number, row) in enumerate(rows, 1):
            if count % 1000 == 0 and budget.spent():
                logger.warning("%s: sheet %r stopped at row %d (time budget)", path, name, number)
                break
            if builder.add(row_text(headers, row), sep=sep, row=number):
                sep = "\n"
    return builder.build(title)


def read_odp(path: Path, *, time_budget: float = ODF_TIME_BUDGET_S) -> Document:
    """Each slide's shapes (the title placeholder whole), tables, then its notes.

    A passage names its slide and never spans two; the title's first line is the section.
    """
    body, title = _open(path, "ODP", "presentation")
    budget = Budget(time_budget)
    builder = DocumentBuilder()
    for number, page in enumerate(body.iter(_PAGE), 1):
        if budget.spent():
            logger.warning("%s: stopped before slide %d (time budget)", path, number)
            break
        shapes = [shape for shape in page if shape.tag != _NOTES]
        titles = [shape for shape in shapes if shape.get(_CLASS) == "title"]
        heading = first_line_heading(_shape_text(titles[0])) if titles else ""
        builder.locator(f"slide {number}", hard=True)
        builder.section(heading)
        for shape in titles + [shape for shape in shapes if shape not in titles]:
            builder.add(_shape_text(shape))
        for notes in page.iter(_NOTES):
            text = "\n".join(_shape_text(frame) for frame in notes if frame.get(_CLASS) == "notes")
            if text.strip():
                builder.add(f"Notes: {text}")
    return builder.build(title)


def _open(path: Path, kind: str, body_kind: str) -> tuple[Any, str]:
    """The package's ``office:<body_kind>`` element and its metadata title."""
    vet_zip(path, kind, "content.xml")
    with zipfile.ZipFile(path) as archive:
        content = _xml(archive.read("content.xml"), kind)
        meta = None
        if "meta.xml" in archive.namelist():
            try:
                meta = _xml(archive.read("meta.xml"), kind)
            except ReadError as e:  # the title is a nicety: never lose the text over it
                logger.warning("%s: metadata could not be read: %s", path, e)
    body = content.find(_q("office:body"))
    inner = body.find(_q(f"office:{body_kind}")) if body is not None else None
    if inner is None:
        found = [child.tag.rsplit("}", 1)[-1] for child in body] if body is not None else []
        holds = f" (it holds: {', '.join(found)})" if found else ""
        raise ReadError(f"not a valid {kind} (no office:{body_kind} body{holds})")
    title_el = meta.find(f".//{_q('dc:title')}") if meta is not None else None
    return inner, clean_title(title_el.text if title_el is not None else "")


def _xml(data: bytes, kind: str) -> Any:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        raise ReadError(f"not a valid {kind}: damaged XML ({short(e)})") from e


def _blocks(container: Any) -> Iterator[Any]:
    """Paragraphs, headings and tables under ``container`` in document order."""
    for child in container:
        if child.tag in (_P, _H, _TABLE):
            yield child
        elif child.tag not in _SKIPPED and isinstance(child.tag, str):
            yield from _blocks(child)  # lists, list items, sections: bounded by libxml2's depth


def _inline(element: Any, notes: list[Any] | None = None) -> str:
    """The text of a paragraph: spans, links, ``text:s`` spaces, tabs and line breaks.

    A note's anchor is left out of the text; the note is appended to ``notes`` if given.
    """
    parts: list[str] = [element.text or ""]
    for child in element:
        if child.tag == _NOTE and notes is not None:
            notes.append(child)
        if child.tag == _SPAN_S:
            count = child.get(_q("text:c"), "1")
            parts.append(" " * min(int(count) if count.isdigit() else 1, 100))
        elif child.tag == _TAB:
            parts.append("\t")
        elif child.tag == _BREAK:
            parts.append("\n")
        elif child.tag not in _SKIPPED and isinstance(child.tag, str):
            parts.append(_inline(child, notes))
        parts.append(child.tail or "")
    return "".join(parts)


def _note_text(note: Any) -> str:
    """A footnote or endnote as ``[1] its paragraphs``, joined on one line."""
    citation = note.find(_CITATION)
    mark = " ".join((citation.text or "").split()) if citation is not None else ""
    body = note.find(_NOTE_BODY)
    text = _cell_text(body) if body is not None else ""
    return f"[{mark}] {text}" if mark and text else text


def _cell_text(cell: Any, notes: list[Any] | None = None) -> str:
    """A cell's paragraphs on one line (comments left out, nested tables flattened)."""
    parts = (_table_text(b, notes) if b.tag == _TABLE else _inline(b, notes) for b in _blocks(cell))
    return " ".join(" ".join(part.split()) for part in parts).strip()


def _table_text(table: Any, notes: list[Any] | None = None) -> str:
    """One line per non-empty row, cells joined by `` | ``."""
    lines = []
    for row in _rows(table):
        cells = [_cell_text(cell, notes) for cell in row if cell.tag in (_CELL, _COVERED)]
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)


def _rows(table: Any) -> Iterator[Any]:
    """A table's own rows, in header-row and row-group wrappers too, not nested tables'."""
    for child in table:
        if child.tag == _ROW:
            yield child
        elif isinstance(child.tag, str) and child.tag != _TABLE and child.tag not in _SKIPPED:
            yield from _rows(child)


def _shape_text(shape: Any) -> str:
    """A slide shape's text: its paragraphs, and tables as rows of cells."""
    return "\n".join(
        _table_text(block) if block.tag == _TABLE else _inline(block) for block in _blocks(shape)
    )


def _sheet_rows(sheet: Any) -> Iterator[tuple[int, Sequence[object]]]:
    """(row number, cell texts) of a sheet, repeated rows and columns within bounds."""
    number = 0
    for row in _rows(sheet):
        repeated = _count(row.get(_ROWS_REPEATED))
        cells = _row_cells(row)
        if not any(cells):
            number += repeated  # the empty rest of a sheet, a million rows: skipped
            continue
        for _ in range(min(repeated, MAX_REPEATED_ROWS)):
            number += 1
            yield number, cells
        number += max(0, repeated - MAX_REPEATED_ROWS)


def _row_cells(row: Any) -> list[str]:
    """A row's cell texts; repeated empty cells expand only up to the next filled one."""
    cells: list[str] = []
    pending_empty = 0
    for cell in row:
        if cell.tag not in (_CELL, _COVERED):
            continue
        text = _cell_text(cell)
        repeated = _count(cell.get(_COLS_REPEATED))
        if not text:
            pending_empty += repeated
            continue
        cells.extend([""] * min(pending_empty, MAX_COLUMNS))
        cells.extend([text] * min(repeated, MAX_COLUMNS))
        pending_empty = 0
        if len(cells) >= MAX_COLUMNS:
            break
    return cells[:MAX_COLUMNS]


def _count(value: str | None) -> int:
    return int(value) if value is not None and value.isdigit() and int(value) > 0 else 1
