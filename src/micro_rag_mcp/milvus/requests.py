"""How the Milvus store's requests are cut to fit Milvus's limits: rows per insert, bytes
per gRPC message, values per ``in [...]`` filter, and rows per query."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from micro_rag_mcp.core.batches import batched as cut

INSERT_BATCH = 1024  # rows per insert or upsert request, at most
INSERT_BYTES = 16 << 20  # and about this much text per request (gRPC caps a message)
QUERY_BATCH = 500  # ids or paths per "in [...]" filter
GRAMS_BATCH = 128  # grams rows per insert or read (each up to 64 KB: gRPC caps a message)
QUERY_LIMIT = 16_384  # the most rows one query returns

T = TypeVar("T")


def batched(items: Sequence[T], n: int = QUERY_BATCH) -> Iterator[Sequence[T]]:
    """``items`` in runs of ``n`` (``core.batches``), ``QUERY_BATCH`` unless told."""
    return cut(items, n)


def sized(rows: Sequence[dict[str, Any]]) -> Iterator[Sequence[dict[str, Any]]]:
    """``rows`` in requests of at most ``INSERT_BATCH`` rows and about ``INSERT_BYTES``."""
    start, size = 0, 0
    for i, row in enumerate(rows):
        size += len(row["text"]) + len(row["keywords"]) + 4 * len(row["dense"])
        if i + 1 - start >= INSERT_BATCH or size >= INSERT_BYTES:
            yield rows[start : i + 1]
            start, size = i + 1, 0
    if start < len(rows):
        yield rows[start:]


def scan(
    c: Any, collection: str, where: str, fields: Sequence[str], size: int = 1000
) -> list[dict[str, Any]]:
    """Every row that matches ``where``, however many (a query returns at most 16,384),
    ``size`` rows a request."""
    return list(pages(c, collection, where, fields, size))


def pages(
    c: Any, collection: str, where: str, fields: Sequence[str], size: int
) -> Iterator[dict[str, Any]]:
    """``scan``'s rows as they come, ``size`` a request: only one request's are held."""
    it = c.query_iterator(collection, batch_size=size, filter=where, output_fields=list(fields))
    try:
        while page := it.next():
            yield from page
    finally:
        it.close()


def ids_by(c: Any, collection: str, where: str, key: str) -> list[int]:
    """The ids of the rows that match ``where``, in the order of their ``key`` field."""
    rows = c.query(collection, filter=where, output_fields=[key], limit=QUERY_LIMIT)
    if len(rows) >= QUERY_LIMIT:  # more than a query returns: every one
        rows = scan(c, collection, where, [key])
    return [int(r["id"]) for r in sorted(rows, key=lambda r: (r[key], r["id"]))]


def count_rows(client: Any, collection: str, where: str) -> int:
    """Rows of ``collection`` that match ``where`` ("": all, answered from row counts)."""
    rows = client.query(collection, filter=where, output_fields=["count(*)"])
    return int(rows[0]["count(*)"]) if rows else 0
