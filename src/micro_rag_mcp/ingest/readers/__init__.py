"""Turn a file on disk into normalized text.

One reader per supported suffix (``READERS``), each in the module of its family;
``read_document`` dispatches, enforces the size limit and turns every failure into a
``ReadError`` whose message is a short, human-readable reason. The text a file yields
is bounded in proportion to its size (``guards.text_bound``). Heavy libraries are
imported inside the readers, so importing this package stays cheap. ``FORMATS`` is the
one list of formats: the ``docs`` and ``code`` groups, the README's format table and
the tests derive from it. Adding a format is one function in its family's module and
one line here.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers.code import read_code
from micro_rag_mcp.ingest.readers.data import read_csv, read_tsv
from micro_rag_mcp.ingest.readers.document import Document, clean_title, normalize_text
from micro_rag_mcp.ingest.readers.guards import (
    MIB,
    bounded_text,
    check_file,
    os_reason,
    short,
    text_bound,
)
from micro_rag_mcp.ingest.readers.images import read_image
from micro_rag_mcp.ingest.readers.mail import read_eml
from micro_rag_mcp.ingest.readers.notebook import read_ipynb
from micro_rag_mcp.ingest.readers.ocr import OCR_MODULE
from micro_rag_mcp.ingest.readers.office import check_docx_archive, read_docx, read_pptx, read_xlsx
from micro_rag_mcp.ingest.readers.opendocument import read_odp, read_ods, read_odt
from micro_rag_mcp.ingest.readers.pdf import read_pdf
from micro_rag_mcp.ingest.readers.text import decode_text_bytes, read_markdown, read_rst, read_text
from micro_rag_mcp.ingest.readers.web import read_epub, read_html

__all__ = [
    "FORMATS",
    "MIB",
    "READERS",
    "Document",
    "Format",
    "check_docx_archive",
    "clean_title",
    "decode_text_bytes",
    "extra_installed",
    "group_suffixes",
    "missing_extra",
    "normalize_text",
    "read_csv",
    "read_document",
    "read_docx",
    "read_epub",
    "read_html",
    "read_ipynb",
    "read_markdown",
    "read_pdf",
    "read_pptx",
    "read_rst",
    "read_text",
    "read_tsv",
    "read_xlsx",
]

Reader = Callable[[Path], Document]
Group = Literal["docs", "code"]


@dataclass(frozen=True, slots=True)
class Format:
    """One file format: its suffixes, its reader, and the ``--exts`` group it belongs to.

    ``extra``: the optional dependency set (``pip install 'micro-rag-mcp[ocr]'``) the
    reader needs; without it the format is not read at all. ``zip_member``: the member
    that makes a zip archive this format (the zip formats are vetted before parsing).
    """

    name: str
    suffixes: tuple[str, ...]
    reader: Reader
    group: Group = "docs"
    extra: str = ""
    zip_member: str = ""

    @property
    def available(self) -> bool:
        return not self.extra or extra_installed(self.extra)


def extra_installed(extra: str) -> bool:
    """Whether the optional dependencies named ``extra`` can be imported (not importing them)."""
    return all(importlib.util.find_spec(module) is not None for module in EXTRAS[extra])


# The modules each optional dependency set brings, as imported.
EXTRAS: dict[str, tuple[str, ...]] = {"ocr": (OCR_MODULE,)}

FORMATS: tuple[Format, ...] = (
    Format("text", (".txt",), read_text),
    Format("Markdown", (".md",), read_markdown),
    Format("PDF", (".pdf",), read_pdf),
    Format("Word", (".docx",), read_docx, zip_member="word/document.xml"),
    Format("Excel", (".xlsx",), read_xlsx, zip_member="xl/workbook.xml"),
    Format("PowerPoint", (".pptx",), read_pptx, zip_member="ppt/presentation.xml"),
    Format("HTML", (".html", ".htm"), read_html),
    Format("EPUB", (".epub",), read_epub, zip_member="META-INF/container.xml"),
    Format("CSV", (".csv",), read_csv),
    Format("TSV", (".tsv",), read_tsv),
    Format("notebook", (".ipynb",), read_ipynb),
    Format("reStructuredText", (".rst",), read_rst),
    Format("text markup and data", (".org", ".tex", ".json", ".yaml", ".yml", ".toml"), read_text),
    Format("OpenDocument text", (".odt",), read_odt, zip_member="content.xml"),
    Format("OpenDocument spreadsheet", (".ods",), read_ods, zip_member="content.xml"),
    Format("OpenDocument presentation", (".odp",), read_odp, zip_member="content.xml"),
    Format("e-mail", (".eml",), read_eml),
    Format("image", (".png", ".jpg", ".jpeg", ".tif", ".tiff"), read_image, extra="ocr"),
    Format(
        "code",
        (".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".cpp", ".h", ".cs", ".rb", ".php")
        + (".sh", ".sql"),
        read_code,
        group="code",
    ),
)

# Raw readers by lowercase suffix, for the formats whose dependencies are installed. They
# raise ReadError for the failures they recognize but may let other exceptions through;
# read_document is the entry point that converts all.
READERS: dict[str, Reader] = {
    suffix: fmt.reader for fmt in FORMATS if fmt.available for suffix in fmt.suffixes
}


def missing_extra(suffix: str) -> str:
    """The extra a format of ``suffix`` needs and lacks here ("ocr"); "" for none."""
    for fmt in FORMATS:
        if suffix in fmt.suffixes and not fmt.available:
            return fmt.extra
    return ""


def group_suffixes(group: Group) -> tuple[str, ...]:
    """The suffixes ``--exts`` group ``group`` stands for: its formats that can be read."""
    return tuple(s for fmt in FORMATS if fmt.group == group and fmt.available for s in fmt.suffixes)


def read_document(path: Path, *, max_bytes: int, suffix: str | None = None) -> Document:
    """Read ``path`` with the reader for its suffix; every failure becomes ``ReadError``.

    ``suffix`` names the format when ``path`` has none of its own (an open descriptor's
    ``/proc/self/fd/N``).
    """
    suffix = (suffix if suffix is not None else path.suffix).lower()
    reader = READERS.get(suffix)
    if reader is None:
        raise ReadError(f"unsupported file type {suffix or '(no suffix)'!r}")
    bound = text_bound(check_file(path, max_bytes), suffix)
    try:
        with bounded_text(bound):
            doc = reader(path)
        bound.check(len(doc.text))  # a reader that builds its text in one piece
        return doc
    except ReadError:
        raise
    except OSError as e:
        raise ReadError(os_reason(e)) from e
    except Exception as e:  # parsers raise many unrelated types; all mean "unreadable"
        raise ReadError(f"could not parse {suffix[1:].upper()} file: {short(e)}") from e
