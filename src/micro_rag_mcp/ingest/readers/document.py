"""What a reader returns, the text clean-up every reader applies, and a builder for both."""

from __future__ import annotations

import re
from dataclasses import dataclass

from micro_rag_mcp.ingest.readers.guards import check_text_length

# Document titles from metadata.
TITLE_MAX_CHARS = 200
_PLACEHOLDER_TITLES = frozenset({"untitled", "untitled document", "no title"})


SECTION_SEPARATOR = " › "
HEADING_MAX_CHARS = 120

Marks = tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class Document:
    """Extracted text and the positions a citation needs; offsets index ``text``.

    - ``page_starts[i]``: where page i+1 begins (PDF only).
    - ``title``: the document's own title from its metadata (PDF ``Title``, DOCX core
      property), cleaned by ``clean_title``; "" when it has none worth showing.
    - ``sections``: where a heading path starts, ``(offset, "Chapter 2 › Results")``,
      sorted by offset; ``""`` ends a section (text under no heading).
    - ``locators``: where a position in the file's own terms starts, ``(offset,
      "slide 4")``, sorted by offset.
    - ``rows``: where a table row starts, ``(offset, row number)``: a passage's locator
      then names the rows it covers (``sheet "Q3" rows 12–30``).
    - ``breaks``: offsets a passage never spans (a sheet, a slide, a chapter), as pages.
    """

    text: str
    page_starts: tuple[int, ...] = ()
    title: str = ""
    sections: Marks = ()
    locators: Marks = ()
    rows: tuple[tuple[int, int], ...] = ()
    breaks: tuple[int, ...] = ()


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


def clean_heading(raw: str) -> str:
    """A heading as one line, whitespace collapsed, at most 120 characters."""
    heading = " ".join(normalize_text(raw).split())
    return heading[:HEADING_MAX_CHARS].rstrip()


def first_line_heading(raw: str) -> str:
    """A title's first non-blank line as a heading, cut at a word past 120 characters.

    For display only: a slide whose title placeholder holds a whole list keeps the list in
    its text, and names the slide by the list's first line.
    """
    line = next((line for line in normalize_text(raw).split("\n") if line.strip()), "")
    heading = " ".join(line.split())
    if len(heading) <= HEADING_MAX_CHARS:
        return heading
    cut = heading[: HEADING_MAX_CHARS - 1]
    if " " in cut[HEADING_MAX_CHARS // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:-") + "…"


class HeadingPath:
    """The path of headings above the current point, as levels are met in reading order."""

    __slots__ = ("_stack",)

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []

    def enter(self, level: int, heading: str) -> str:
        """Record a heading of ``level`` (1 is the top); return the path it starts."""
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        heading = clean_heading(heading)
        if heading:
            self._stack.append((level, heading))
        return self.path()

    def path(self) -> str:
        return SECTION_SEPARATOR.join(heading for _, heading in self._stack)


class DocumentBuilder:
    """Assemble a document's text block by block, recording where each mark falls.

    ``section``, ``locator`` and ``row`` marks take effect at the next block added, so a
    heading or slide with no text after it leaves no mark. Blocks are normalized and
    joined by their separator; blank blocks are skipped.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._sections: list[tuple[int, str]] = []
        self._locators: list[tuple[int, str]] = []
        self._rows: list[tuple[int, int]] = []
        self._breaks: list[int] = []
        self._section: str | None = None
        self._locator: tuple[str, bool] | None = None
        self._break = False

    @property
    def length(self) -> int:
        """Characters of text so far."""
        return self._length

    def section(self, path: str) -> None:
        """The text added next lies under the heading path ``path`` ("" for none)."""
        self._section = path

    def locator(self, label: str, *, hard: bool = False) -> None:
        """The text added next is at ``label``; ``hard``: no passage spans into it."""
        self._locator = (label, hard)

    def hard_break(self) -> None:
        """No passage spans from the text before into the text added next."""
        self._break = True

    def add(
        self, text: str, *, sep: str = "\n\n", row: int | None = None, sections: Marks = ()
    ) -> bool:
        """Append a block; whether anything was added.

        ``row``: the block is that table row. ``sections``: heading paths starting inside
        the block, at offsets relative to its start (a block that is a whole chapter).
        Raises ``ReadError`` once the text passes the file's bound (``guards.text_bound``).
        """
        text = normalize_text(text)
        if not text.strip():
            return False
        check_text_length(self._length + len(text) + 2)
        if self._parts:
            self._parts.append(sep)
            self._length += len(sep)
        offset = self._length
        if self._section is not None:
            _mark(self._sections, offset, self._section)
            self._section = None
        if self._locator is not None:
            label, hard = self._locator
            _mark(self._locators, offset, label)
            self._break = self._break or hard
            self._locator = None
        if self._break and offset > 0:
            self._breaks.append(offset)
        self._break = False
        for relative, path in sections:
            _mark(self._sections, offset + relative, path)
        if row is not None:
            self._rows.append((offset, row))
        self._parts.append(text)
        self._length += len(text)
        return True

    def build(self, title: str = "") -> Document:
        return Document(
            "".join(self._parts),
            title=title,
            sections=tuple(self._sections),
            locators=tuple(self._locators),
            rows=tuple(self._rows),
            breaks=tuple(self._breaks),
        )


def _mark(marks: list[tuple[int, str]], offset: int, label: str) -> None:
    """Add a mark, replacing one at the same offset; a repeat of the last label is dropped."""
    if marks and marks[-1][0] == offset:
        marks.pop()
    if not marks or marks[-1][1] != label:
        marks.append((offset, label))
