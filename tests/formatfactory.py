"""Build small real files of the newer formats (XLSX, PPTX, EPUB, notebooks) in a folder.

Made with the real libraries (openpyxl, python-pptx) or, for EPUB and notebooks, by
writing the format's files as a publishing tool would. Every ``make_*`` returns ``path``.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def make_xlsx(path: Path, sheets: dict[str, Sequence[Sequence[object]]], title: str = "") -> Path:
    """A workbook with one sheet per entry, rows as given (a value "=…" is a formula)."""
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    book.properties.title = title or None
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)
    return path


@dataclass(frozen=True)
class Slide:
    title: str = ""
    body: Sequence[str] = ()  # paragraphs of the content placeholder
    grouped: Sequence[str] = ()  # text boxes inside a group shape
    table: Sequence[Sequence[str]] = ()
    notes: str = ""
    extra: Sequence[str] = field(default_factory=tuple)  # loose text boxes


def make_pptx(path: Path, slides: Sequence[Slide]) -> Path:
    """A deck with the given slides (layout "Title and Content")."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    layout = deck.slide_layouts[1]
    for spec in slides:
        slide = deck.slides.add_slide(layout)
        if spec.title:
            slide.shapes.title.text = spec.title
        body = slide.placeholders[1].text_frame
        for i, text in enumerate(spec.body):
            paragraph = body.paragraphs[0] if i == 0 else body.add_paragraph()
            paragraph.text = text
        if spec.grouped:
            group = slide.shapes.add_group_shape()
            for i, text in enumerate(spec.grouped):
                box = group.shapes.add_textbox(Inches(1), Inches(1 + i), Inches(3), Inches(1))
                box.text_frame.text = text
        for text in spec.extra:
            slide.shapes.add_textbox(Inches(5), Inches(5), Inches(2), Inches(1)).text = text
        if spec.table:
            rows, cols = len(spec.table), len(spec.table[0])
            shape = slide.shapes.add_table(rows, cols, Inches(1), Inches(4), Inches(6), Inches(2))
            for r, row in enumerate(spec.table):
                for c, value in enumerate(row):
                    shape.table.cell(r, c).text = value
        if spec.notes:
            slide.notes_slide.notes_text_frame.text = spec.notes
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(str(path))
    return path


def make_epub(path: Path, chapters: Sequence[tuple[str, str]], *, title: str = "A Book") -> Path:
    """An EPUB 3 with one XHTML file per ``(file title, body HTML)``, in spine order.

    The spine lists the chapters in reverse file-name order, so reading order must come
    from the spine, not from the archive.
    """
    names = [f"text/ch{i:02d}.xhtml" for i in range(len(chapters))][::-1]
    items = "".join(
        f'<item id="c{i}" href="{name}" media-type="application/xhtml+xml"/>'
        for i, name in enumerate(names)
    )
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(names)))
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<dc:title>{title}</dc:title></metadata>"
        f'<manifest>{items}<item id="css" href="s.css" media-type="text/css"/></manifest>'
        f"<spine>{spine}</spine></package>"
    )
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        z.writestr("META-INF/container.xml", container)
        z.writestr("OEBPS/content.opf", opf)
        z.writestr("OEBPS/s.css", "p { margin: 0 }")
        for name, (head, body) in zip(names, chapters, strict=True):
            z.writestr(
                f"OEBPS/{name}",
                '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                f"<head><title>{head}</title></head><body>{body}</body></html>",
            )
    return path


def notebook_json(cells: Sequence[dict[str, Any]]) -> str:
    return json.dumps({"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def md_cell(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": source.splitlines(keepends=True)}


def code_cell(source: str, outputs: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "outputs": list(outputs),
        "source": source,
    }


def make_ipynb(path: Path, cells: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_json(cells), encoding="utf-8")
    return path


def text_image(lines: Sequence[str], *, dpi: int = 150) -> Any:
    """A PIL image of ``lines`` printed in 14 pt Helvetica, as a scanner would see them."""
    import io

    import pypdfium2 as pdfium
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    size = (460.0, 40.0 + 22.0 * len(lines))
    pdf = canvas.Canvas(buf, pagesize=size, invariant=True)
    pdf.setFont("Helvetica", 14)
    for i, line in enumerate(lines):
        pdf.drawString(20, size[1] - 30 - 22 * i, line)
    pdf.showPage()
    pdf.save()
    document = pdfium.PdfDocument(buf.getvalue())
    try:
        return document[0].render(scale=dpi / 72).to_pil().convert("L")
    finally:
        document.close()


def make_scanned_pdf(path: Path, pages: Sequence[tuple[str, Sequence[str]]]) -> Path:
    """A PDF whose pages each have a text layer (first item, "" for none) and an image
    of the printed lines (second item, empty for none)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=A4, invariant=True)
    for layer, lines in pages:
        if lines:
            image = text_image(lines)
            width = 460.0
            height = width * image.height / image.width
            pdf.drawImage(ImageReader(image), 60, A4[1] - 80 - height, width=width, height=height)
        if layer:
            pdf.setFont("Helvetica", 12)
            pdf.drawString(60, 60, layer)
        pdf.showPage()
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.save()
    return path


ODF_NAMESPACES = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" '
    'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"'
)
ODF_MIMETYPES = {
    "text": "application/vnd.oasis.opendocument.text",
    "spreadsheet": "application/vnd.oasis.opendocument.spreadsheet",
    "presentation": "application/vnd.oasis.opendocument.presentation",
}


def make_odf(path: Path, kind: str, body: str, *, title: str = "") -> Path:
    """An OpenDocument package of ``kind`` (text, spreadsheet, presentation) whose
    ``office:<kind>`` element holds ``body``, laid out as LibreOffice writes it."""
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ODF_NAMESPACES} '
        f'office:version="1.3"><office:body><office:{kind}>{body}</office:{kind}>'
        "</office:body></office:document-content>"
    )
    meta = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-meta {ODF_NAMESPACES}>'
        f"<office:meta><dc:title>{title}</dc:title></office:meta></office:document-meta>"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", ODF_MIMETYPES[kind], compress_type=zipfile.ZIP_STORED)
        z.writestr("content.xml", content)
        z.writestr("meta.xml", meta)
        z.writestr("META-INF/manifest.xml", '<?xml version="1.0"?><manifest/>')
    return path


def ods_row(*cells: str, repeat: int = 1) -> str:
    """A spreadsheet row of text cells (``""`` an empty one)."""
    inner = "".join(
        f"<table:table-cell><text:p>{c}</text:p></table:table-cell>" if c else "<table:table-cell/>"
        for c in cells
    )
    rep = f' table:number-rows-repeated="{repeat}"' if repeat > 1 else ""
    return f"<table:table-row{rep}>{inner}</table:table-row>"


def make_blank_scan(path: Path) -> Path:
    """A PDF whose one page is a white image: a scan with no words, with or without OCR."""
    from PIL import Image
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), invariant=True)
    pdf.drawImage(ImageReader(Image.new("L", (300, 200), 255)), 50, 50, width=300, height=200)
    pdf.save()
    return path
