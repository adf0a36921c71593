"""The file formats the index takes: their suffixes, their ``--exts`` group, and the
optional dependency set each needs. ``FORMATS`` is the one list of formats: the ``docs``
and ``code`` groups, the README's format table and the tests derive from it; how each
format is read is ``ingest.readers``' part (one reader per format, by its name).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Group = Literal["docs", "code"]


@dataclass(frozen=True, slots=True)
class Format:
    """One file format: its suffixes and the ``--exts`` group it belongs to.

    ``extra``: the optional dependency set (``pip install 'micro-rag-mcp[ocr]'``) the
    reader needs; without it the format is not read at all. ``zip_member``: the member
    that makes a zip archive this format (the zip formats are vetted before parsing).
    """

    name: str
    suffixes: tuple[str, ...]
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
EXTRAS: dict[str, tuple[str, ...]] = {"ocr": ("rapidocr_onnxruntime",)}
# The last Python an extra's packages install on (pyproject.toml's markers):
# rapidocr-onnxruntime has no release for Python 3.13.
EXTRA_PYTHON_LAST: dict[str, tuple[int, int]] = {"ocr": (3, 12)}


def install_hint(extra: str, python: tuple[int, ...] = tuple(sys.version_info[:2])) -> str:
    """How to get ``extra``: its pip command, or why this Python cannot have it."""
    last = EXTRA_PYTHON_LAST.get(extra)
    if last is not None and python[:2] > last:
        here = ".".join(map(str, python[:2]))
        return (
            f"the {extra} extra needs Python {last[0]}.{last[1]} or older "
            f"(this is {here}); install micro-rag-mcp[{extra}] under such a Python"
        )
    return f"pip install 'micro-rag-mcp[{extra}]'"


FORMATS: tuple[Format, ...] = (
    Format("text", (".txt",)),
    Format("Markdown", (".md",)),
    Format("PDF", (".pdf",)),
    Format("Word", (".docx",), zip_member="word/document.xml"),
    Format("Excel", (".xlsx",), zip_member="xl/workbook.xml"),
    Format("PowerPoint", (".pptx",), zip_member="ppt/presentation.xml"),
    Format("HTML", (".html", ".htm")),
    Format("EPUB", (".epub",), zip_member="META-INF/container.xml"),
    Format("CSV", (".csv",)),
    Format("TSV", (".tsv",)),
    Format("notebook", (".ipynb",)),
    Format("reStructuredText", (".rst",)),
    Format("text markup and data", (".org", ".tex", ".json", ".yaml", ".yml", ".toml")),
    Format("OpenDocument text", (".odt",), zip_member="content.xml"),
    Format("OpenDocument spreadsheet", (".ods",), zip_member="content.xml"),
    Format("OpenDocument presentation", (".odp",), zip_member="content.xml"),
    Format("e-mail", (".eml",)),
    Format("image", (".png", ".jpg", ".jpeg", ".tif", ".tiff"), extra="ocr"),
    Format(
        "code",
        (".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".cpp", ".h", ".cs", ".rb", ".php")
        + (".sh", ".sql"),
        group="code",
    ),
)


CODE_SUFFIXES: frozenset[str] = frozenset(
    s for fmt in FORMATS if fmt.group == "code" for s in fmt.suffixes
)


# Files whose passages may be code that their suffix does not name (functions saved as
# .txt, code blocks in notes), told by their text (``code_text.reads_as_code``). Data
# and configuration formats are not: their ``key = value`` lines read as assignments.
CODE_IN_TEXT_SUFFIXES = frozenset(
    {".txt", ".md", ".rst", ".org", ".tex", ".html", ".htm", ".ipynb", ".eml"}
)


def _suffix(path: str) -> str:
    dot = path.rfind(".")
    return path[dot:].lower() if dot > path.rfind("/") + 1 else ""


def is_code(path: str) -> bool:
    """Whether the file at ``path`` is source code (a suffix of the ``code`` group)."""
    return _suffix(path) in CODE_SUFFIXES


def may_read_as_code(path: str) -> bool:
    """Whether a passage of the file at ``path`` is code if its text reads as code."""
    return _suffix(path) in CODE_IN_TEXT_SUFFIXES


def all_code(suffixes: Iterable[str]) -> bool:
    """Whether every file of ``suffixes`` is source code (then every passage is)."""
    code = [suffix.lower() in CODE_SUFFIXES for suffix in suffixes]
    return bool(code) and all(code)


def missing_extra(suffix: str) -> str:
    """The extra a format of ``suffix`` needs and lacks here ("ocr"); "" for none."""
    for fmt in FORMATS:
        if suffix in fmt.suffixes and not fmt.available:
            return fmt.extra
    return ""


def group_suffixes(group: Group) -> tuple[str, ...]:
    """The suffixes ``--exts`` group ``group`` stands for: its formats that can be read."""
    return tuple(s for fmt in FORMATS if fmt.group == group and fmt.available for s in fmt.suffixes)
