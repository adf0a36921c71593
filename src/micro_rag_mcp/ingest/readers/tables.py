"""Where a table's header is: the first row, or the row of labels under a title row.

Spreadsheets and exported CSVs often open with a title ("Stanley Cups") in one cell,
then the real header. Taking the title for the header would label every value with it,
so a run of at most ``MAX_TITLE_ROWS`` rows with one filled cell each, directly above a
row of at least two distinct labels (text, not numbers), is read as the table's title.
Every other shape keeps the first non-empty row as the header: a one-column table, a
title above a row of numbers (data, not labels), a header with a repeated name, a title
spread over two cells, more than three one-cell rows.
"""

from __future__ import annotations

import datetime
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from micro_rag_mcp.ingest.readers.document import SECTION_SEPARATOR, clean_heading

MAX_TITLE_ROWS = 3

Row = tuple[int, Sequence[object]]  # (row number as a spreadsheet shows it, cell values)

_NUMBER = re.compile(r"[-+(]?[$€£¥]?\s*\d[\d\s.,']*%?\)?")


@dataclass(frozen=True, slots=True)
class TableHead:
    """A table's header row and its title ("" when it has none)."""

    header: Sequence[object]
    title: str = ""


def table_head(rows: Iterator[Row]) -> tuple[TableHead | None, Iterator[Row]]:
    """The head of the table ``rows`` open with, and the data rows after it.

    Empty rows before the header are skipped; None when every row is empty.
    """
    peeked: list[Row] = []
    for number, row in rows:
        filled = _filled(row)
        if not filled:
            continue
        peeked.append((number, row))
        if len(filled) != 1 or len(peeked) > MAX_TITLE_ROWS:
            break
    if not peeked:
        return None, rows
    *above, (_, last) = peeked
    if above and _labels(last):
        title = SECTION_SEPARATOR.join(clean_heading(_filled(row)[0]) for _, row in above)
        return TableHead(last, title), rows
    return TableHead(peeked[0][1]), itertools.chain(peeked[1:], rows)


def _text(value: object) -> str:
    return "" if value is None else " ".join(str(value).split())


def _filled(row: Sequence[object]) -> list[str]:
    return [text for text in map(_text, row) if text]


def _labels(row: Sequence[object]) -> bool:
    """Whether ``row`` reads as column names: two or more distinct texts, none a number."""
    values = [value for value in row if _text(value)]
    if len(values) < 2:
        return False
    for value in values:
        if isinstance(value, int | float | datetime.date | datetime.time):
            return False
        if _NUMBER.fullmatch(_text(value)):
            return False
    names = [_text(value).casefold() for value in values]
    return len(set(names)) == len(names)
