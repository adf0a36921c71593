"""Small hostile files that reuse one part to yield far more text than their size.

Written by hand (zip members, PDF objects) so the reuse is exact: an EPUB whose spine
names one chapter many times, an XLSX whose cells all point at one shared string, a PDF
whose pages all draw one content stream, an HTML page of self-closed ``<div/>``. Every
``make_*`` returns ``path``; the bench (``bench/hostile.py``) builds the same files.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

_WORDS = "alpaca quietly measures the orchard while seven herons argue about tea "


def filler(chars: int) -> str:
    """``chars`` characters of words, in sentences of about 70 characters."""
    return (_WORDS * (chars // len(_WORDS) + 1))[:chars]


def make_repeated_spine_epub(path: Path, *, repeats: int, chapter_chars: int) -> Path:
    """An EPUB whose spine names its one chapter ``repeats`` times."""
    spine = '<itemref idref="c"/>' * repeats
    paragraphs = "".join(f"<p>{filler(1000)}</p>" for _ in range(chapter_chars // 1000))
    opf = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Echo</dc:title>'
        '</metadata><manifest><item id="c" href="c.xhtml" media-type="application/xhtml+xml"/>'
        f"</manifest><spine>{spine}</spine></package>"
    )
    container = (
        '<?xml version="1.0"?><container version="1.0" '
        'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    chapter = (
        '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
        f"<head><title>Again</title></head><body>{paragraphs}</body></html>"
    )
    return _zip(
        path,
        {
            "mimetype": "application/epub+zip",
            "META-INF/container.xml": container,
            "OEBPS/content.opf": opf,
            "OEBPS/c.xhtml": chapter,
        },
    )


def make_shared_string_xlsx(path: Path, *, rows: int, columns: int, string_chars: int) -> Path:
    """An XLSX of ``rows`` × ``columns`` cells that all show one shared string."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    letters = [_column(i) for i in range(columns)]
    sheet_rows = "".join(
        f'<row r="{r}">'
        + "".join(f'<c r="{col}{r}" t="s"><v>0</v></c>' for col in letters)
        + "</row>"
        for r in range(1, rows + 1)
    )
    ct = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    return _zip(
        path,
        {
            "[Content_Types].xml": (
                '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/'
                'package/2006/content-types"><Default Extension="rels" ContentType='
                '"application/vnd.openxmlformats-package.relationships+xml"/>'
                '<Default Extension="xml" ContentType="application/xml"/>'
                f'<Override PartName="/xl/workbook.xml" ContentType="{ct}.sheet.main+xml"/>'
                '<Override PartName="/xl/worksheets/sheet1.xml" '
                f'ContentType="{ct}.worksheet+xml"/>'
                '<Override PartName="/xl/sharedStrings.xml" '
                f'ContentType="{ct}.sharedStrings+xml"/></Types>'
            ),
            "_rels/.rels": (
                '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
                'package/2006/relationships"><Relationship Id="r1" Type="'
                f'{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
            ),
            "xl/workbook.xml": (
                f'<?xml version="1.0"?><workbook xmlns="{main}" xmlns:r="{rel}"><sheets>'
                '<sheet name="Echo" sheetId="1" r:id="r1"/></sheets></workbook>'
            ),
            "xl/_rels/workbook.xml.rels": (
                '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
                f'package/2006/relationships"><Relationship Id="r1" Type="{rel}/worksheet" '
                'Target="worksheets/sheet1.xml"/><Relationship Id="r2" Type="'
                f'{rel}/sharedStrings" Target="sharedStrings.xml"/></Relationships>'
            ),
            "xl/sharedStrings.xml": (
                f'<?xml version="1.0"?><sst xmlns="{main}" count="1" uniqueCount="1">'
                f"<si><t>{filler(string_chars)}</t></si></sst>"
            ),
            "xl/worksheets/sheet1.xml": (
                f'<?xml version="1.0"?><worksheet xmlns="{main}"><sheetData>{sheet_rows}'
                "</sheetData></worksheet>"
            ),
        },
    )


def make_shared_stream_pdf(path: Path, *, pages: int, lines: int) -> Path:
    """A PDF of ``pages`` pages that all draw one content stream of ``lines`` lines."""
    text = "".join(f"({filler(90)}) Tj T* " for _ in range(lines))
    stream = f"BT /F1 4 Tf 5 TL 10 800 Td {text}ET".encode()
    first_page = 5
    kids = " ".join(f"{first_page + i} 0 R" for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
    page += b"/Resources << /Font << /F1 3 0 R >> >> >>"
    objects += [page] * pages
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return _write(path, bytes(out))


def make_div_flood_html(path: Path, *, divs: int) -> Path:
    """A page of ``divs`` self-closed ``<div/>``: the parser nests every one in the last."""
    return _write(path, b"<html><body><p>flood</p>" + b"<div/>" * divs + b"</body></html>")


def _column(index: int) -> str:
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


def _zip(path: Path, members: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return path


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path
