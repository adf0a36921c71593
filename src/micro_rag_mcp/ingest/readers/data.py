"""Tables: CSV and TSV (stdlib ``csv``), and the row text every table reader shares.

Each row becomes one line naming its columns, ``Name: Ada; Team: Core``, so a passage
says what its values are; row numbers are those a spreadsheet shows (the header is
row 1, or the row under a title: ``tables.table_head``), and passages cite the rows
they cover.
"""

from __future__ import annotations

import csv
import datetime
import io
import logging
from collections.abc import Sequence
from pathlib import Path

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers.document import Document, DocumentBuilder, normalize_text
from micro_rag_mcp.ingest.readers.guards import Budget
from micro_rag_mcp.ingest.readers.tables import MAX_TITLE_ROWS, table_head
from micro_rag_mcp.ingest.readers.text import decode_text_bytes

logger = logging.getLogger(__name__)

TABLE_TIME_BUDGET_S = 60.0
MAX_COLUMNS = 1000  # columns past this are left out of a row's text
MAX_CELL_CHARS = 10_000  # a cell's text past this is cut
CSV_FIELD_LIMIT = 10 * 1024 * 1024  # a field longer than this makes the file unreadable
_SNIFF_CHARS = 64 * 1024


def cell_text(value: object) -> str:
    """A cell value as text: whole numbers without ``.0``, dates in ISO form, one line."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        text = value.isoformat()
        return text.removesuffix("T00:00:00")
    text = " ".join(normalize_text(str(value)).split())
    return text[:MAX_CELL_CHARS]


def headers_of(row: Sequence[object]) -> list[str]:
    """Column names from a header row; an unnamed column is ``Column N``."""
    names = [cell_text(v) for v in row[:MAX_COLUMNS]]
    return [name or f"Column {i}" for i, name in enumerate(names, 1)]


def row_text(headers: Sequence[str], row: Sequence[object]) -> str:
    """``Header: value; …`` for the row's non-empty cells."""
    parts = []
    for i, value in enumerate(row[:MAX_COLUMNS]):
        text = cell_text(value)
        if text:
            name = headers[i] if i < len(headers) else f"Column {i + 1}"
            parts.append(f"{name}: {text}")
    return "; ".join(parts)


def read_csv(path: Path, *, time_budget: float = TABLE_TIME_BUDGET_S) -> Document:
    """Every row with its header; the delimiter (``,`` ``;`` tab ``|``) is sniffed."""
    return _read_delimited(path, None, time_budget)


def read_tsv(path: Path, *, time_budget: float = TABLE_TIME_BUDGET_S) -> Document:
    """Every row of a tab-separated table with its header."""
    return _read_delimited(path, "\t", time_budget)


def _read_delimited(path: Path, delimiter: str | None, time_budget: float) -> Document:
    text = decode_text_bytes(path.read_bytes())
    dialect = _dialect(text[:_SNIFF_CHARS], delimiter)
    csv.field_size_limit(CSV_FIELD_LIMIT)
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    budget = Budget(time_budget)
    builder = DocumentBuilder()
    number = 0
    try:
        head, rows = table_head(enumerate(reader, 1))
        headers = headers_of(head.header) if head is not None else []
        builder.section(head.title if head is not None else "")
        for number, row in rows:  # noqa: B007 (number is used after the loop)
            if number % 1000 == 0 and budget.spent():
                logger.warning("%s: stopped at row %d (time budget used up)", path, number)
                break
            builder.add(row_text(headers, row), sep="\n", row=number)
    except csv.Error as e:
        raise ReadError(f"could not parse CSV file: row {number + 1}: {e}") from e
    return builder.build()


def _dialect(sample: str, delimiter: str | None) -> type[csv.Dialect] | csv.Dialect:
    """The sample's dialect, or Excel's (with ``delimiter``) when it cannot be told.

    Title lines without any delimiter (``tables.table_head``) are left out of the sample:
    they would make every delimiter look inconsistent.
    """
    candidates = delimiter or ",;\t|"
    lines = sample.splitlines(keepends=True)
    titles = 0
    while titles < min(MAX_TITLE_ROWS, len(lines) - 1) and not any(
        d in lines[titles] for d in candidates
    ):
        titles += 1
    sample = "".join(lines[titles:])
    try:
        sniffed = csv.Sniffer().sniff(sample, delimiters=candidates)
    except csv.Error:
        sniffed = None
    if sniffed is not None and (delimiter is None or sniffed.delimiter == delimiter):
        return sniffed
    return csv.excel_tab if delimiter == "\t" else csv.excel
