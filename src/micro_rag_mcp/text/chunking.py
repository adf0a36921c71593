"""Split text into overlapping chunks with exact source offsets, and map offsets back.

Chunk boundaries prefer, within the last half of each window, a paragraph break, then a
line break, then a sentence end, then whitespace; only text without any of those is cut
hard. All searches are bounded by the window, so chunking is linear in the text length.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

_NON_WS = re.compile(r"\S")
_WS = re.compile(r"\s")
# Anchored with match(text, lo, hi): greedy ".*" finds the LAST occurrence in [lo, hi).
_LAST_PARAGRAPH = re.compile(r".*(\n[^\S\n]*\n)", re.DOTALL)
_LAST_SENTENCE_END = re.compile(r".*(?:[.?!](?=\s)|[。！？](?=.))", re.DOTALL)
_LAST_WS = re.compile(r".*\s", re.DOTALL)
_NUMBERED = re.compile(r"([a-z]+) (\d+)")  # a locator such as "cell 7"


@dataclass(frozen=True, slots=True)
class Chunk:
    """``text == source[start:end]``; ``index`` is the position in the chunk list."""

    index: int
    start: int
    end: int
    text: str


def chunk_text(text: str, size: int = 1000, overlap: int = 200) -> list[Chunk]:
    """Chunks of at most ``size`` chars, consecutive ones sharing about ``overlap`` chars.

    Chunks never start or end with whitespace, whitespace-only stretches produce no
    chunk, and every non-whitespace character is in at least one chunk. The effective
    overlap is capped at ``size // 2``.
    """
    if size <= 0:
        raise ValueError(f"chunk size must be positive, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"overlap must be in [0, size), got {overlap} for size {size}")
    overlap = min(overlap, size // 2)
    n = len(text)
    chunks: list[Chunk] = []
    prev_end = 0
    start = _skip_ws(text, 0)
    while start < n:
        end = _chunk_end(text, start, size)
        if end <= prev_end:  # nothing new in this window: continue after the last chunk
            start = _skip_ws(text, prev_end)
            continue
        chunks.append(Chunk(len(chunks), start, end, text[start:end]))
        prev_end = end
        if _skip_ws(text, end) >= n:
            break
        start = _skip_ws(text, _next_start(text, start, end, size, overlap))
    return chunks


def _skip_ws(text: str, pos: int) -> int:
    """First non-whitespace offset at or after ``pos`` (``len(text)`` if none)."""
    m = _NON_WS.search(text, pos)
    return m.start() if m else len(text)


def _chunk_end(text: str, start: int, size: int) -> int:
    """End of the chunk starting at ``start`` (a non-whitespace char), trailing space trimmed."""
    limit = start + size
    cut = len(text) if limit >= len(text) else _break_point(text, start + max(1, size // 2), limit)
    return start + len(text[start:cut].rstrip())


def _break_point(text: str, lo: int, hi: int) -> int:
    """Best cut in ``[lo, hi]``: paragraph, line, sentence end, whitespace, else ``hi``."""
    m = _LAST_PARAGRAPH.match(text, lo, hi + 1)
    if m:
        return m.start(1)
    i = text.rfind("\n", lo, hi + 1)
    if i >= 0:
        return i
    m = _LAST_SENTENCE_END.match(text, lo, hi + 1)
    if m:
        return m.end()
    m = _LAST_WS.match(text, lo, hi + 1)
    if m:
        return m.end() - 1
    return hi


def _next_start(text: str, start: int, end: int, size: int, overlap: int) -> int:
    """Where the next chunk begins: a word start near ``end - overlap``, after ``start``."""
    target = end - overlap
    if target <= start:  # chunk shorter than the overlap: nothing sensible to repeat
        return end
    return _word_start_near(text, target, max(start + 1, end - size // 2), end)


def _word_start_near(text: str, target: int, lo: int, hi: int) -> int:
    """The word boundary in ``[lo, hi]`` nearest to ``target``; ``target`` if there is none.

    A returned whitespace position is fine: the caller skips whitespace forward.
    """
    if text[target].isspace() or text[target - 1].isspace():
        return target
    ahead = _WS.search(text, target, hi + 1)
    back = _LAST_WS.match(text, lo - 1, target)
    forward = ahead.start() if ahead else None
    backward = back.end() if back else None
    if forward is not None and (backward is None or forward - target <= target - backward):
        return forward
    return backward if backward is not None else target


class Locator:
    """Maps offsets in one document's text to lines, pages, sections and locators.

    ``sections`` and ``locators`` are ``(offset, label)`` marks sorted by offset, ``rows``
    ``(offset, row number)`` marks; see ``readers.Document``.
    """

    __slots__ = ("_newlines", "_page_starts", "_rows", "_row_starts", "_sections", "_spots")

    def __init__(
        self,
        text: str,
        page_starts: Sequence[int] = (),
        *,
        sections: Sequence[tuple[int, str]] = (),
        locators: Sequence[tuple[int, str]] = (),
        rows: Sequence[tuple[int, int]] = (),
    ) -> None:
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        self._page_starts = tuple(page_starts)
        self._sections = _Marks(sections)
        self._spots = _Marks(locators)
        self._row_starts = [offset for offset, _ in rows]
        self._rows = [row for _, row in rows]

    def lines(self, start: int, end: int) -> tuple[int, int]:
        """First and last line (1-based) of ``text[start:end]``."""
        first = bisect_left(self._newlines, start) + 1
        last = bisect_left(self._newlines, max(start, end - 1)) + 1
        return first, last

    def page(self, start: int) -> int | None:
        """1-based page containing offset ``start``; None when the document has no pages."""
        if not self._page_starts:
            return None
        return max(1, bisect_right(self._page_starts, start))

    def section(self, start: int) -> str | None:
        """The heading path in force at ``start``; None under no heading."""
        return self._sections.at(start)[1] or None

    def where(self, start: int, end: int) -> str | None:
        """The position of ``text[start:end]`` in the file's own terms, or None.

        The locator in force at ``start`` (``slide 4``), followed by the rows the passage
        covers when the document has rows (``sheet "Q3" rows 12–30``); a row counts only
        after the locator it falls under. A passage across numbered locators of one kind
        names them all (``cells 3–5``).
        """
        since, label = self._spots.at(start)
        label = _span(label, self._spots.at(end - 1)[1] if end > start else label)
        rows = self._rows_between(max(since, 0), start, end)
        if rows:
            first_row, last_row = rows
            span = f"row {first_row}" if first_row == last_row else f"rows {first_row}–{last_row}"
            label = f"{label} {span}" if label else span
        return label or None

    def _rows_between(self, floor: int, start: int, end: int) -> tuple[int, int] | None:
        """First and last row numbers of rows starting in ``[floor, end)`` that reach ``start``."""
        lo = bisect_right(self._row_starts, start) - 1
        if lo < 0 or self._row_starts[lo] < floor:
            lo += 1  # no row in force at start: the first row starting after it
        hi = bisect_left(self._row_starts, end) - 1
        if lo > hi or lo >= len(self._rows):
            return None
        return self._rows[lo], self._rows[hi]


def _span(first: str, last: str) -> str:
    """``cell 3`` to ``cell 5`` is ``cells 3–5``; anything else is ``first``."""
    a, b = _NUMBERED.fullmatch(first), _NUMBERED.fullmatch(last)
    if a is None or b is None or first == last or a.group(1) != b.group(1):
        return first
    return f"{a.group(1)}s {a.group(2)}–{b.group(2)}"


class _Marks:
    """``(offset, label)`` marks, looked up by the offset they are in force at."""

    __slots__ = ("_labels", "_offsets")

    def __init__(self, marks: Sequence[tuple[int, str]]) -> None:
        self._offsets = [offset for offset, _ in marks]
        self._labels = [label for _, label in marks]

    def at(self, offset: int) -> tuple[int, str]:
        """The mark in force at ``offset`` as (its offset, its label); (-1, "") if none."""
        i = bisect_right(self._offsets, offset) - 1
        return (self._offsets[i], self._labels[i]) if i >= 0 else (-1, "")
