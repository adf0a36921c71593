"""Turn a file on disk into normalized text.

One reader per supported suffix (``READERS``), each in the module of its family;
``read_document`` dispatches, enforces the size limit, cuts runs of encoded bytes out
of the text (``encoded``) and turns every failure into a ``ReadError`` whose message is
a short, human-readable reason. The text a file yields is bounded in proportion to its
size (``guards.text_bound``). Heavy libraries are imported inside the readers, so
importing this package stays cheap. The formats are listed in ``core.formats``; adding
one is a line there, one function in its family's module and its line in
``READ_BY_FORMAT`` here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.core.formats import FORMATS
from micro_rag_mcp.ingest.readers.code import read_code
from micro_rag_mcp.ingest.readers.data import read_csv, read_tsv
from micro_rag_mcp.ingest.readers.document import Document, clean_title, normalize_text
from micro_rag_mcp.ingest.readers.encoded import without_encoded_runs
from micro_rag_mcp.ingest.readers.guards import (
    MIB,
    bounded_text,
    check_file,
    os_reason,
    short,
    text_bound,
)
from micro_rag_mcp.ingest.readers.images import read_image
from micro_rag_mcp.ingest.readers.mail import Attachments, read_eml
from micro_rag_mcp.ingest.readers.notebook import read_ipynb
from micro_rag_mcp.ingest.readers.office import check_docx_archive, read_docx, read_xlsx
from micro_rag_mcp.ingest.readers.opendocument import read_odp, read_ods, read_odt
from micro_rag_mcp.ingest.readers.pdf import read_pdf
from micro_rag_mcp.ingest.readers.powerpoint import read_pptx
from micro_rag_mcp.ingest.readers.text import (
    decode_text_bytes,
    read_markdown,
    read_plain,
    read_rst,
    read_text,
)
from micro_rag_mcp.ingest.readers.web import read_epub, read_html

__all__ = [
    "MIB",
    "READERS",
    "Document",
    "check_docx_archive",
    "clean_title",
    "decode_text_bytes",
    "normalize_text",
    "read_csv",
    "read_document",
    "read_docx",
    "read_epub",
    "read_html",
    "read_ipynb",
    "read_markdown",
    "read_plain",
    "read_pdf",
    "read_pptx",
    "read_rst",
    "read_text",
    "read_tsv",
    "read_xlsx",
]

Reader = Callable[[Path], Document]


# The reader of each format of ``core.formats.FORMATS``, by the format's name.
READ_BY_FORMAT: dict[str, Reader] = {
    "text": read_plain,
    "Markdown": read_markdown,
    "PDF": read_pdf,
    "Word": read_docx,
    "Excel": read_xlsx,
    "PowerPoint": read_pptx,
    "HTML": read_html,
    "EPUB": read_epub,
    "CSV": read_csv,
    "TSV": read_tsv,
    "notebook": read_ipynb,
    "reStructuredText": read_rst,
    "text markup and data": read_text,
    "OpenDocument text": read_odt,
    "OpenDocument spreadsheet": read_ods,
    "OpenDocument presentation": read_odp,
    "e-mail": lambda path: read_eml(path, attachments=Attachments(read_document, READERS)),
    "image": read_image,
    "code": read_code,
}

# Raw readers by lowercase suffix, for the formats whose dependencies are installed. They
# raise ReadError for the failures they recognize but may let other exceptions through;
# read_document is the entry point that converts all.
READERS: dict[str, Reader] = {
    suffix: READ_BY_FORMAT[fmt.name] for fmt in FORMATS if fmt.available for suffix in fmt.suffixes
}


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
        return without_encoded_runs(doc)
    except ReadError:
        raise
    except OSError as e:
        if e.errno is not None:  # the system's failure (EIO, EACCES...): the file may be fine
            raise ReadError(os_reason(e), transient=True) from e
        # A decoder's complaint about the bytes (Pillow: "image file is truncated"): the
        # file's own fault, so it is not read again until it changes.
        raise ReadError(_parse_reason(suffix, e)) from e
    except Exception as e:  # parsers raise many unrelated types; all mean "unreadable"
        raise ReadError(_parse_reason(suffix, e)) from e


def _parse_reason(suffix: str, e: Exception) -> str:
    return f"could not parse {suffix[1:].upper()} file: {short(e)}"
