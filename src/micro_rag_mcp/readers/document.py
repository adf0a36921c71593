"""What a reader returns, and the text clean-up every reader applies."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Document titles from metadata.
TITLE_MAX_CHARS = 200
_PLACEHOLDER_TITLES = frozenset({"untitled", "untitled document", "no title"})


@dataclass(frozen=True, slots=True)
class Document:
    """Extracted text; ``page_starts[i]`` is the offset where page i+1 begins (PDF only).

    ``title`` is the document's own title from its metadata (PDF ``Title``, DOCX core
    property), cleaned by ``clean_title``; "" when it has none worth showing.
    """

    text: str
    page_starts: tuple[int, ...] = ()
    title: str = ""


_NEWLINE_RE = re.compile(r"\r\n?|\v")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def normalize_text(text: str) -> str:
    """Unify newlines and drop control characters.

    ``\\r\\n``, ``\\r`` and ``\\v`` become ``\\n``; a form feed becomes ``\\n\\n`` (a page
    or section break); other C0 controls and DEL are dropped (``\\t`` and ``\\n`` kept);
    lone surrogates, which cannot be encoded as UTF-8, become U+FFFD.
    """
    text = _NEWLINE_RE.sub("\n", text).replace("\f", "\n\n")
    text = _CONTROL_RE.sub("", text)
    return _SURROGATE_RE.sub("\ufffd", text)


def clean_title(raw: object) -> str:
    """A metadata title fit to show: one line, whitespace collapsed, at most 200 characters.

    "" when ``raw`` is not a string, has no letter or digit, or is a placeholder a tool
    writes when the author gave none ("untitled").
    """
    if not isinstance(raw, str):
        return ""
    title = " ".join(normalize_text(raw).split())
    if not any(ch.isalnum() for ch in title) or title.casefold() in _PLACEHOLDER_TITLES:
        return ""
    return title[:TITLE_MAX_CHARS].rstrip()
