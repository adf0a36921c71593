"""Office Open XML documents: DOCX (python-docx).

Every package is vetted as a zip (``guards.vet_zip``) before a library expands anything.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from micro_rag_mcp.errors import ReadError
from micro_rag_mcp.readers.document import Document, clean_title, normalize_text
from micro_rag_mcp.readers.guards import (
    DEFAULT_ZIP_LIMITS,
    ZIP_MAX_EXPANDED_BYTES,
    ZIP_MAX_RATIO,
    ZIP_RATIO_MIN_BYTES,
    ZipLimits,
    short,
    vet_zip,
)

logger = logging.getLogger(__name__)


def read_docx(
    path: Path,
    *,
    max_expanded_bytes: int = ZIP_MAX_EXPANDED_BYTES,
    max_ratio: int = ZIP_MAX_RATIO,
    ratio_min_bytes: int = ZIP_RATIO_MIN_BYTES,
) -> Document:
    """Paragraphs and tables of the body in document order, separated by blank lines.

    Table rows become one line each, cells joined by `` | ``. The archive is vetted
    (see ``check_docx_archive``) before python-docx expands anything.
    """
    check_docx_archive(path, ZipLimits(max_expanded_bytes, max_ratio, ratio_min_bytes))
    import docx

    try:
        document = docx.Document(str(path))
    except OSError:
        raise
    except Exception as e:  # python-docx / lxml raise many types for malformed packages
        raise ReadError(f"not a valid DOCX: {short(e)}") from e
    blocks = (block for block in _block_texts(document.element.body) if block.strip())
    return Document(normalize_text("\n\n".join(blocks)), title=_docx_title(document, path))


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
            parts.append(el.text or "")
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
