"""The catalog's term statistics: about what share of the chunks hold a term, counted in
a few windows of ids so the cost does not grow with the catalog, and about how many
chunks there are."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Literal

from micro_rag_mcp.local.catalog.words import hashed


class TermStats:
    """The term counts of one catalog connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def shares_among(
        self,
        terms: Sequence[str],
        windows: int = 4,
        width: int = 2500,
        table: Literal["chunks_fts", "chunks_cjk"] = "chunks_fts",
    ) -> tuple[dict[str, float], int]:
        """About what share of the table's rows contain each term, and about how many
        rows it holds, counted in ``windows`` runs of ``width`` ids spread over the rows'
        ids (all of them when they are that few), so the cost does not grow with the
        catalog. ``table``: the words' index (a row per chunk), or the CJK bigrams' (a
        row per chunk that holds CJK text: a share of those, however few of the
        folder's chunks they are)."""
        ranges, rows, total = self._sample(table, windows, width)
        shares: dict[str, float] = {}
        for term in terms:
            hits = sum(
                int(
                    self._conn.execute(
                        f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"
                        " AND rowid BETWEEN ? AND ?",
                        (f'"{hashed(term) if table == "chunks_fts" else term}"', first, last),
                    ).fetchone()[0]
                )
                for first, last in ranges
            )
            shares[term] = hits / rows if rows else 0.0
        return shares, total

    def _sample(
        self, table: str, windows: int, width: int
    ) -> tuple[list[tuple[int, int]], int, int]:
        """The id ranges ``shares_among`` counts in, the rows in them, and about how many
        rows the table holds."""
        # FTS5's own table of row sizes: its ids are the rows', and counting there reads
        # no text. Two subqueries: min and max together in one would scan the table.
        lo, hi = self._conn.execute(
            f"SELECT (SELECT min(id) FROM {table}_docsize), (SELECT max(id) FROM {table}_docsize)"
        ).fetchone()
        if hi is None:
            return [], 0, 0
        whole = [(int(lo), int(hi))]
        span = int(hi) - int(lo) + 1
        sampled = windows * width
        if span <= sampled:
            rows = self._rows_within(table, whole)
            return whole, rows, rows
        step = span // windows
        ranges = [(int(lo) + i * step, int(lo) + i * step + width - 1) for i in range(windows)]
        rows = self._rows_within(table, ranges)
        if rows * span <= sampled * sampled:
            # Rows spread thin over their ids (a few CJK files in a large folder): the
            # windows may miss them all. If they are few, every one is counted.
            total = self._rows_within(table, whole)
            if total <= sampled:
                return whole, total, total
        return ranges, rows, round(rows * span / sampled)

    def _rows_within(self, table: str, ranges: Sequence[tuple[int, int]]) -> int:
        return sum(
            int(
                self._conn.execute(
                    f"SELECT count(*) FROM {table}_docsize WHERE id BETWEEN ? AND ?", r
                ).fetchone()[0]
            )
            for r in ranges
        )

    def id_span(self) -> int:
        """One more than the largest chunk id less the smallest: about how many chunks
        there are (ids are given in order), read from the ends of the index alone."""
        lo, hi = self._conn.execute(
            "SELECT (SELECT min(id) FROM chunks), (SELECT max(id) FROM chunks)"
        ).fetchone()
        return 0 if hi is None else int(hi) - int(lo) + 1
