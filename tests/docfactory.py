"""Build real test documents (PDF via reportlab, DOCX via python-docx) in a folder.

Every ``make_*`` function writes the file at ``path`` (creating parent folders) and returns
``path``. PDFs use the Helvetica base font, so page text should stay within Latin-1.
"""

from __future__ import annotations

import io
import textwrap
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIB = 1024 * 1024

_PAGE_WIDTH_CHARS = 95
_PAGE_MAX_LINES = 55


# --------------------------------------------------------------------------- PDF


def pdf_bytes(pages: Sequence[str], *, title: str = "untitled") -> bytes:
    """A PDF with one page per string, each line drawn as real (extractable) text.

    ``title`` goes into the document information dictionary; the default is what
    reportlab writes when none is set.
    """
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=A4, invariant=True)
    pdf.setTitle(title)
    for page in pages:
        lines = [
            wrapped
            for line in page.splitlines()
            for wrapped in (textwrap.wrap(line, _PAGE_WIDTH_CHARS) or [""])
        ]
        if len(lines) > _PAGE_MAX_LINES:
            raise ValueError(f"page has {len(lines)} lines; at most {_PAGE_MAX_LINES} fit")
        text = pdf.beginText(50, A4[1] - 60)
        text.setFont("Helvetica", 10)
        for line in lines:
            text.textLine(line)
        pdf.drawText(text)
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def make_pdf(path: Path, pages: Sequence[str], *, title: str = "untitled") -> Path:
    """A text PDF with one page per entry of ``pages``, titled ``title`` in its metadata."""
    return _write(path, pdf_bytes(pages, title=title))


def make_pdf_without_info(path: Path, pages: Sequence[str]) -> Path:
    """A text PDF with no document information dictionary at all (so no title)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(pages))))
    writer.metadata = None
    out = io.BytesIO()
    writer.write(out)
    return _write(path, out.getvalue())


def make_image_only_pdf(path: Path, pages: int = 1) -> Path:
    """A "scanned" PDF: each page is a raster image of some words, with no text layer."""
    from PIL import Image, ImageDraw
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=A4, invariant=True)
    for number in range(1, pages + 1):
        image = Image.new("L", (400, 120), color=255)
        ImageDraw.Draw(image).text((20, 50), f"Scanned page {number}: no text layer", fill=0)
        pdf.drawImage(ImageReader(image), 50, A4[1] - 200, width=400, height=120)
        pdf.showPage()
    pdf.save()
    return _write(path, buf.getvalue())


def make_encrypted_pdf(
    path: Path,
    user_password: str,
    pages: Sequence[str] = ("Confidential quarterly figures.",),
    *,
    owner_password: str = "owner-secret",
    algorithm: str = "RC4-128",
) -> Path:
    """A text PDF encrypted by pypdf (``algorithm``: RC4-40, RC4-128, AES-128, AES-256).

    An empty ``user_password`` gives the common "opens without a password, but has
    restrictions" kind of file. AES needs the ``cryptography`` package to write and read.
    """
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(pages))))
    writer.encrypt(user_password, owner_password, algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return _write(path, out.getvalue())


def make_truncated_pdf(path: Path, pages: Sequence[str], fraction: float = 0.5) -> Path:
    """The first ``fraction`` of the bytes of a real text PDF."""
    data = pdf_bytes(pages)
    return _write(path, data[: int(len(data) * fraction)])


def make_garbage_file(path: Path, size: int = 4096, *, seed: int = 1234) -> Path:
    """``size`` pseudo-random bytes (deterministic for a given seed), whatever the suffix."""
    import random

    return _write(path, random.Random(seed).randbytes(size))


# --------------------------------------------------------------------------- DOCX


@dataclass(frozen=True)
class Heading:
    """A heading paragraph (python-docx style "Heading <level>", or "Title" for level 0)."""

    text: str
    level: int = 1


@dataclass(frozen=True)
class Paragraph:
    """A body paragraph with an optional style and tab stops (positions in inches)."""

    text: str
    style: str | None = None
    tab_stops: Sequence[float] = ()


@dataclass(frozen=True)
class Table:
    """A table; a cell is a string or a nested ``Table``."""

    rows: Sequence[Sequence[str | Table]] = field(default_factory=list)


Block = str | Heading | Paragraph | Table  # a plain string is a paragraph ("" = empty one)


def make_docx(path: Path, blocks: Sequence[Block], *, title: str = "") -> Path:
    """A DOCX whose body holds ``blocks`` in order; ``title`` is its core-properties title."""
    import docx
    from docx.shared import Inches

    document = docx.Document()
    document.core_properties.title = title
    for block in blocks:
        if isinstance(block, Heading):
            document.add_heading(block.text, level=block.level)
        elif isinstance(block, Table):
            _fill_table(document, block)
        elif isinstance(block, Paragraph):
            paragraph = document.add_paragraph(block.text, style=block.style)
            for inches in block.tab_stops:
                paragraph.paragraph_format.tab_stops.add_tab_stop(Inches(inches))
        else:
            document.add_paragraph(block)
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))
    return path


def _fill_table(container: Any, table: Table) -> None:
    """Add ``table`` to a document or a cell (python-docx ``add_table`` on either)."""
    columns = max((len(row) for row in table.rows), default=1)
    grid = container.add_table(rows=len(table.rows), cols=columns)
    for r, row in enumerate(table.rows):
        for c, value in enumerate(row):
            cell = grid.cell(r, c)
            if isinstance(value, Table):
                _fill_table(cell, value)
            else:
                cell.text = value


_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" '
    'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    "</Types>"
)
_ROOT_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="word/document.xml"/>'
    "</Relationships>"
)


def make_zip_bomb_docx(path: Path, expanded_bytes: int = 300 * MIB) -> Path:
    """A DOCX-shaped zip whose word/document.xml is ``expanded_bytes`` of compressed zeros.

    Written in 1 MiB pieces, so building it never holds the expanded data in memory.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    piece = bytes(MIB)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("[Content_Types].xml", _CONTENT_TYPES)
        zf.writestr("_rels/.rels", _ROOT_RELS)
        with zf.open("word/document.xml", "w", force_zip64=True) as member:
            remaining = expanded_bytes
            while remaining > 0:
                member.write(piece[: min(MIB, remaining)])
                remaining -= MIB
    return path


def make_bare_docx(path: Path, body_xml: str, *, doctype: str = "") -> Path:
    """A minimal DOCX package: content types, relationships and ``word/document.xml``
    whose ``w:body`` holds ``body_xml`` (after ``doctype``, if given); no core
    properties (``docProps/core.xml``)."""
    document = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f"{doctype}"
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        f"<w:body>{body_xml}</w:body></w:document>"
    )
    return make_zip(
        path,
        {
            "[Content_Types].xml": _CONTENT_TYPES,
            "_rels/.rels": _ROOT_RELS,
            "word/document.xml": document,
        },
    )


def make_zip(path: Path, members: dict[str, bytes | str]) -> Path:
    """A zip archive (e.g. a damaged ``.docx``) with exactly ``members``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return path


# --------------------------------------------------------------------------- text


def make_text(path: Path, text: str, encoding: str = "utf-8", *, bom: bool = False) -> Path:
    """``text`` encoded with ``encoding``; ``bom`` prefixes U+FEFF before encoding.

    Use an explicit-endian codec (``utf-16-le``) with ``bom=True``: plain ``utf-16``
    already writes a BOM of its own.
    """
    return _write(path, (("\ufeff" + text) if bom else text).encode(encoding))


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


__all__ = [
    "MIB",
    "Block",
    "Heading",
    "Paragraph",
    "Table",
    "make_bare_docx",
    "make_docx",
    "make_encrypted_pdf",
    "make_garbage_file",
    "make_image_only_pdf",
    "make_pdf",
    "make_pdf_without_info",
    "make_text",
    "make_truncated_pdf",
    "make_zip",
    "make_zip_bomb_docx",
    "pdf_bytes",
]
