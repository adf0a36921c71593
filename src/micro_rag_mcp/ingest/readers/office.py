"""Office Open XML documents: DOCX (python-docx) and XLSX (openpyxl); PPTX is ``powerpoint``.

Every package is vetted as a zip (``guards.vet_zip``) before a library expands anything.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers.data import headers_of, row_text
from micro_rag_mcp.ingest.readers.document import (
    Document,
    DocumentBuilder,
    HeadingPath,
    clean_title,
)
from micro_rag_mcp.ingest.readers.guards import (
    DEFAULT_ZIP_LIMITS,
    ZIP_MAX_EXPANDED_BYTES,
    ZIP_MAX_RATIO,
    ZIP_RATIO_MIN_BYTES,
    Budget,
    ZipLimits,
    short,
    vet_zip,
)
from micro_rag_mcp.ingest.readers.tables import table_head

logger = logging.getLogger(__name__)


def read_docx(
    path: Path,
    *,
    max_expanded_bytes: int = ZIP_MAX_EXPANDED_BYTES,
    max_ratio: int = ZIP_MAX_RATIO,
    ratio_min_bytes: int = ZIP_RATIO_MIN_BYTES,
) -> Document:
    """Paragraphs and tables of the body in document order, separated by blank lines.

    Table rows become one line each, cells joined by `` | ``. Paragraphs in a heading
    style (or with an outline level) give the sections. The archive is vetted (see
    ``check_docx_archive``) before python-docx expands anything.
    """
    check_docx_archive(path, ZipLimits(max_expanded_bytes, max_ratio, ratio_min_bytes))
    import docx

    try:
        document = docx.Document(str(path))
    except OSError:
        raise
    except Exception as e:  # python-docx / lxml raise many types for malformed packages
        raise ReadError(f"not a valid DOCX: {short(e)}") from e
    levels = _heading_levels(document, path)
    headings = HeadingPath()
    builder = DocumentBuilder()
    for child in _content_children(document.element.body):
        if child.tag == _P:
            text = _paragraph_text(child)
            level = _paragraph_level(child, levels)
            if level is not None and text.strip():
                builder.section(headings.enter(level, text))
            builder.add(text)
        elif child.tag == _TBL:
            builder.add(_table_text(child))
    return builder.build(_docx_title(document, path))


def _docx_title(document: Any, path: Path) -> str:
    """The core properties' title, cleaned; "" when the package has no core properties.

    python-docx invents core properties titled "Word Document" for a package without
    them, so their presence is checked first.
    """
    from docx.opc.constants import RELATIONSHIP_TYPE

    package = document.part.package
    try:
        package.part_related_by(RELATIONSHIP_TYPE.CORE_PROPERTIES)
    except KeyError:
        return ""
    try:
        raw = package.core_properties.title
    except Exception as e:  # the title is a nicety: never lose the text over it
        logger.warning("%s: title could not be read: %s", path, short(e))
        return ""
    return clean_title(raw)


def check_docx_archive(path: Path, limits: ZipLimits = DEFAULT_ZIP_LIMITS) -> None:
    """Refuse non-zips, zip bombs and archives without ``word/document.xml``."""
    vet_zip(path, "DOCX", "word/document.xml", limits)


_HEADING_NAME = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
_BODY_TEXT_LEVEL = 9  # w:outlineLvl 9 means "body text", not a heading


def _heading_levels(document: Any, path: Path) -> dict[str, int]:
    """Paragraph style ids that make a heading, with their level (1 is the top).

    A style is a heading by its name ("heading 2", as Word stores built-in names
    whatever the interface language), by its outline level, or by the style it is
    based on.
    """
    try:
        styles = document.styles.element
    except Exception as e:  # the sections are a nicety: never lose the text over them
        logger.warning("%s: styles could not be read: %s", path, short(e))
        return {}
    own: dict[str, int] = {}
    based_on: dict[str, str] = {}
    for style in styles.iterchildren(_w("style")):
        style_id = style.get(_w("styleId"))
        if not style_id or style.get(_w("type"), "paragraph") != "paragraph":
            continue
        level = _style_level(style)
        if level is not None:
            own[style_id] = level
        parent = style.find(_w("basedOn"))
        if parent is not None and parent.get(_w("val")):
            based_on[style_id] = parent.get(_w("val"))
    levels: dict[str, int] = {}
    for style_id in {*own, *based_on}:
        seen = style_id
        for _ in range(10):  # a basedOn chain is short; a loop must not hang
            if seen in own:
                levels[style_id] = own[seen]
                break
            if seen not in based_on:
                break
            seen = based_on[seen]
    return levels


def _style_level(style: Any) -> int | None:
    name = style.find(_w("name"))
    match = _HEADING_NAME.fullmatch((name.get(_w("val")) or "") if name is not None else "")
    if match:
        return int(match.group(1))
    return _outline_level(style.find(_w("pPr")))


def _outline_level(ppr: Any) -> int | None:
    """The heading level a ``w:pPr``'s outline level gives, if any."""
    outline = ppr.find(_w("outlineLvl")) if ppr is not None else None
    value = outline.get(_w("val")) if outline is not None else None
    if value is None or not value.isdigit() or int(value) >= _BODY_TEXT_LEVEL:
        return None
    return int(value) + 1


def _paragraph_level(paragraph: Any, levels: dict[str, int]) -> int | None:
    """A paragraph's heading level: its own outline level, else its style's."""
    ppr = paragraph.find(_w("pPr"))
    own = _outline_level(ppr)
    if own is not None:
        return own
    style = ppr.find(_w("pStyle")) if ppr is not None else None
    return levels.get(style.get(_w("val"), "")) if style is not None else None


def _w(tag: str) -> str:
    """Clark-notation name of a WordprocessingML element."""
    return "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}" + tag


_P, _TBL, _TR, _TC = _w("p"), _w("tbl"), _w("tr"), _w("tc")
_WRAPPERS = (_w("sdt"), _w("customXml"))
_SDT_CONTENT = _w("sdtContent")
_T, _TAB, _BR, _CR, _TABS = _w("t"), _w("tab"), _w("br"), _w("cr"), _w("tabs")


def _block_texts(container: Any) -> Iterator[str]:
    """Text of each paragraph / table directly in ``container`` (body or cell), in order."""
    for child in _content_children(container):
        if child.tag == _P:
            yield _paragraph_text(child)
        elif child.tag == _TBL:
            yield _table_text(child)


def _content_children(element: Any) -> Iterator[Any]:
    """Children of ``element``, looking through content controls and custom XML."""
    for child in element:
        if child.tag in _WRAPPERS:
            content = child.find(_SDT_CONTENT)
            yield from _content_children(content if content is not None else child)
        else:
            yield child


def _paragraph_text(paragraph: Any) -> str:
    """Text of a ``w:p`` including hyperlinks, tracked insertions and text boxes."""
    parts: list[str] = []
    for el in paragraph.iter(_T, _TAB, _BR, _CR):
        if el.tag == _T:
            # An entity reference is left unresolved: a child node, with the text after
            # it as its tail.
            parts.append(el.text or "")
            parts.extend(child.tail or "" for child in el)
        elif el.tag == _TAB:
            if el.getparent() is not None and el.getparent().tag != _TABS:  # not a tab stop
                parts.append("\t")
        else:
            parts.append("\n")
    return "".join(parts)


def _table_text(table: Any) -> str:
    """One line per non-empty row, cells joined by `` | ``; nested tables flattened."""
    lines: list[str] = []
    for row in _content_children(table):
        if row.tag != _TR:
            continue
        cells = [_cell_text(cell) for cell in _content_children(row) if cell.tag == _TC]
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)


def _cell_text(cell: Any) -> str:
    """All text of a cell on one line."""
    return " ".join(" ".join(block.split()) for block in _block_texts(cell) if block.strip())


# --------------------------------------------------------------------------- XLSX

SHEET_TIME_BUDGET_S = 60.0


def read_xlsx(path: Path, *, time_budget: float = SHEET_TIME_BUDGET_S) -> Document:
    """Every worksheet, each row with its header row (``Name: Ada; Team: Core``).

    Cell values as last calculated, never formulas; a passage names its sheet and the
    rows it covers and never spans two sheets; a title above the header
    (``tables.table_head``) is the sheet's section. Charts and images are left out.
    """
    vet_zip(path, "XLSX", "xl/workbook.xml")
    import openpyxl

    with open(path, "rb") as stream:  # a stream: openpyxl refuses names without .xlsx
        try:
            book = openpyxl.load_workbook(stream, read_only=True, data_only=True)
        except OSError:
            raise
        except Exception as e:  # openpyxl / the XML parser raise many types for bad packages
            raise ReadError(f"not a valid XLSX: {short(e)}") from e
        budget = Budget(time_budget)
        builder = DocumentBuilder()
        try:
            for sheet in book.worksheets:
                if not hasattr(sheet, "iter_rows"):
                    continue  # a chart sheet
                if budget.spent():
                    logger.warning("%s: stopped before sheet %r (time budget)", path, sheet.title)
                    break
                _add_sheet(builder, sheet, budget, path)
            title = clean_title(book.properties.title)
        finally:
            book.close()
    return builder.build(title)


def _add_sheet(builder: DocumentBuilder, sheet: Any, budget: Budget, path: Path) -> None:
    sheet.reset_dimensions()  # read the cells there are, not the range the file claims
    name = sheet.title.replace('"', "'")
    builder.locator(f'sheet "{name}"', hard=True)
    head, rows = table_head(enumerate(sheet.iter_rows(min_row=1, values_only=True), 1))
    if head is None:
        return
    headers = headers_of(head.header)
    builder.section(head.title)
    sep = "\n\n"  # before the sheet's first row, then one row a line
    for number, row in rows:
        if number % 1000 == 0 and budget.spent():
            logger.warning("%s: sheet %r stopped at row %d (time budget)", path, name, number)
            return
        if builder.add(row_text(headers, row), sep=sep, row=number):
            sep = "\n"
