"""Turn a file on disk into normalized text.

One reader per supported suffix (``READERS``), each in the module of its family;
``read_document`` dispatches, enforces the size limit and turns every failure into a
``ReadError`` whose message is a short, human-readable reason. The text a file yields
is bounded in proportion to its size (``guards.text_bound``). Heavy libraries are
imported inside the readers, so importing this package stays cheap. Adding a format is
one function in its family's module and one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from micro_rag_mcp.errors import ReadError
from micro_rag_mcp.readers.code import read_code
from micro_rag_mcp.readers.data import read_csv, read_tsv
from micro_rag_mcp.readers.document import Document, clean_title, normalize_text
from micro_rag_mcp.readers.guards import (
    MIB,
    bounded_text,
    check_file,
    os_reason,
    short,
    text_bound,
)
from micro_rag_mcp.readers.notebook import read_ipynb
from micro_rag_mcp.readers.office import check_docx_archive, read_docx, read_pptx, read_xlsx
from micro_rag_mcp.readers.pdf import read_pdf
from micro_rag_mcp.readers.text import decode_text_bytes, read_markdown, read_rst, read_text
from micro_rag_mcp.readers.web import read_epub, read_html

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
    "read_pdf",
    "read_pptx",
    "read_rst",
    "read_text",
    "read_tsv",
    "read_xlsx",
]

Reader = Callable[[Path], Document]

# Read as plain text, cited by lines.
TEXT_SUFFIXES = (".org", ".tex", ".json", ".yaml", ".yml", ".toml")
CODE_SUFFIXES = (
    *(".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".cpp", ".h", ".cs", ".rb", ".php"),
    *(".sh", ".sql"),
)

# Raw readers by lowercase suffix. They raise ReadError for the failures they recognize but
# may let other exceptions through; read_document is the entry point that converts all.
READERS: dict[str, Reader] = {
    ".txt": read_text,
    ".md": read_markdown,
    ".pdf": read_pdf,
    ".docx": read_docx,
    ".xlsx": read_xlsx,
    ".pptx": read_pptx,
    ".html": read_html,
    ".htm": read_html,
    ".epub": read_epub,
    ".csv": read_csv,
    ".tsv": read_tsv,
    ".ipynb": read_ipynb,
    ".rst": read_rst,
    **dict.fromkeys(TEXT_SUFFIXES, read_text),
    **dict.fromkeys(CODE_SUFFIXES, read_code),
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
        return doc
    except ReadError:
        raise
    except OSError as e:
        raise ReadError(os_reason(e)) from e
    except Exception as e:  # parsers raise many unrelated types; all mean "unreadable"
        raise ReadError(f"could not parse {suffix[1:].upper()} file: {short(e)}") from e
