"""The catalog's read queries: files, chunks, keyword search, term statistics.

``Catalog`` adds to them the opening, the transactions and the writes; a reader
connection (``Catalog.open_reader``) uses these alone.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from micro_rag_mcp.core.formats import is_code, may_read_as_code
from micro_rag_mcp.core.records import FileRecord, StoredChunk
from micro_rag_mcp.text.code_text import reads_as_code

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class CatalogQueries:
    """The catalog's read queries: files, chunks, keyword search, term statistics."""

    _conn: sqlite3.Connection

    def files(self) -> dict[str, FileRecord]:
        rows = self._conn.execute(
            "SELECT path, ext, size, mtime_ns, checksum, status, error FROM files"
        )
        return {r[0]: FileRecord(*r) for r in rows}

    def file_rows(self) -> list[tuple[int, str, str, int]]:
        """Id, path, suffix and mtime_ns of every file indexed without failure."""
        rows = self._conn.execute("SELECT id, path, ext, mtime_ns FROM files WHERE status = 'ok'")
        return [(int(i), str(p), str(e), int(m)) for i, p, e, m in rows]

    def chunk_ids_of(self, file_ids: Sequence[int]) -> list[tuple[int, int]]:
        """The id and vector key of every chunk of the given files."""
        rows = self._conn.execute(
            "SELECT id, vkey FROM chunks WHERE file_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(file_ids)),),
        )
        return [(int(r[0]), int(r[1])) for r in rows]

    def indexed_files(self, prefix: str, after: str, limit: int) -> list[tuple[Any, ...]]:
        """Path, suffix, size, mtime_ns and indexed_at of up to ``limit`` files indexed
        without failure whose path starts with ``prefix`` and sorts after ``after``."""
        rows = self._conn.execute(
            "SELECT path, ext, size, mtime_ns, indexed_at FROM files WHERE status = 'ok'"
            " AND path > ? AND path >= ? AND path < ? ORDER BY path LIMIT ?",
            (after, prefix, prefix + "\U0010ffff", limit),
        )
        return list(rows)

    def stamps(self) -> dict[str, tuple[int, int]]:
        """Each file's recorded (size, mtime_ns): all a no-change reindex needs to know."""
        rows = self._conn.execute("SELECT path, size, mtime_ns FROM files")
        return {path: (size, mtime_ns) for path, size, mtime_ns in rows}

    def stamps_under(self, paths: Iterable[str]) -> dict[str, tuple[int, int]]:
        """``stamps`` of the files at the given paths or under them (folders)."""
        found: dict[str, tuple[int, int]] = {}
        for p in paths:
            rows = self._conn.execute(
                "SELECT path, size, mtime_ns FROM files WHERE path = ? OR (path > ? AND path < ?)",
                (p, f"{p}/", f"{p}0"),
            )
            found.update({path: (size, mtime_ns) for path, size, mtime_ns in rows})
        return found

    def holds_under(self, folder: str) -> bool:
        """Whether any file is recorded under ``folder`` (relative, no trailing '/')."""
        row = self._conn.execute(
            "SELECT 1 FROM files WHERE path > ? AND path < ? LIMIT 1", (f"{folder}/", f"{folder}0")
        ).fetchone()
        return row is not None

    def failures(self) -> list[tuple[str, str]]:
        rows = self._conn.execute(
            "SELECT path, coalesce(error, '') FROM files WHERE status = 'failed' ORDER BY path"
        )
        return [(str(p), str(e)) for p, e in rows]

    def chunk_ids(self) -> list[int]:
        return [int(r[0]) for r in self._conn.execute("SELECT id FROM chunks ORDER BY id")]

    def chunk_ids_after(self, after: int, limit: int) -> list[int]:
        """Up to ``limit`` chunk ids above ``after``, in order: chunks stored since then."""
        rows = self._conn.execute(
            "SELECT id FROM chunks WHERE id > ? ORDER BY id LIMIT ?", (after, limit)
        )
        return [int(r[0]) for r in rows]

    def count_chunks_after(self, after: int) -> int:
        row = self._conn.execute("SELECT count(*) FROM chunks WHERE id > ?", (after,)).fetchone()
        return int(row[0])

    def chunk_texts(self, ids: Iterable[int]) -> dict[int, tuple[int, str, str]]:
        """Vector key, title and text of the given chunk ids that still exist."""
        rows = self._select_ids("SELECT id, vkey, title, text FROM chunks WHERE id IN ({})", ids)
        return {int(cid): (int(key), str(title), str(text)) for cid, key, title, text in rows}

    def id_keys(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Every chunk id, in order, and the vector key of each."""
        import numpy as np

        rows = self._conn.execute("SELECT id, vkey FROM chunks ORDER BY id").fetchall()
        pairs = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0].copy(), pairs[:, 1].copy()

    def keys_of(self, ids: Iterable[int]) -> dict[int, int]:
        """The vector key of each given chunk id that still exists."""
        rows = self._select_ids("SELECT id, vkey FROM chunks WHERE id IN ({})", ids)
        return {int(cid): int(key) for cid, key in rows}

    def chunks_of_keys(self, keys: Iterable[int]) -> dict[int, list[int]]:
        """The chunk ids that carry each given vector key (none for a key no chunk has)."""
        found: dict[int, list[int]] = {}
        for key, cid in self._select_ids(
            "SELECT vkey, id FROM chunks WHERE vkey IN ({}) ORDER BY id", keys
        ):
            found.setdefault(int(key), []).append(int(cid))
        return found

    def file_chunk_ids(self, path: str) -> list[int]:
        """The chunk ids of one file, in order."""
        rows = self._conn.execute(
            "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ?"
            " ORDER BY c.chunk_index",
            (path,),
        )
        return [int(r[0]) for r in rows]

    def fetch(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        """The chunks (joined with their files) for the given ids that still exist."""
        rows = self._select_ids(
            "SELECT c.id, f.path, f.ext, f.mtime_ns, c.chunk_index, c.char_start, c.char_end,"
            " c.line_start, c.line_end, c.page, c.text, f.size, c.section, c.locator"
            " FROM chunks c"
            " JOIN files f ON f.id = c.file_id WHERE c.id IN ({})",
            ids,
        )
        return {int(r[0]): StoredChunk(*r) for r in rows}

    def file_record(self, path: str) -> FileRecord | None:
        row = self._conn.execute(
            "SELECT path, ext, size, mtime_ns, checksum, status, error FROM files WHERE path = ?",
            (path,),
        ).fetchone()
        return None if row is None else FileRecord(*row)

    def file_extent(self, path: str) -> tuple[int, dict[int, tuple[int, int]]]:
        """Where one file's chunks end, and each page's first and last offset (PDF)."""
        rows = self._conn.execute(
            "SELECT c.page, min(c.char_start), max(c.char_end) FROM chunks c"
            " JOIN files f ON f.id = c.file_id WHERE f.path = ? GROUP BY c.page",
            (path,),
        ).fetchall()
        end = max((int(r[2]) for r in rows), default=0)
        return end, {int(p): (int(s), int(e)) for p, s, e in rows if p is not None}

    def file_chunks(self, path: str, start: int, end: int) -> list[StoredChunk]:
        """One file's chunks that overlap ``[start, end)``, in order, with the nearest
        chunk on either side (chunk starts and ends both rise with the chunk index)."""
        rows = self._conn.execute(
            "WITH f AS (SELECT id, path, ext, mtime_ns, size FROM files WHERE path = ?)"
            " SELECT c.id, f.path, f.ext, f.mtime_ns, c.chunk_index, c.char_start, c.char_end,"
            " c.line_start, c.line_end, c.page, c.text, f.size, c.section, c.locator"
            " FROM chunks c JOIN f ON c.file_id = f.id"
            " WHERE c.chunk_index BETWEEN"
            " coalesce((SELECT max(chunk_index) FROM chunks WHERE file_id = f.id"
            " AND char_end <= ?), 0) AND"
            " coalesce((SELECT min(chunk_index) FROM chunks WHERE file_id = f.id"
            " AND char_start >= ?), 1 << 62)"
            " ORDER BY c.chunk_index",
            (path, start, end),
        )
        return [StoredChunk(*r) for r in rows]

    def last_indexed_at(self) -> float | None:
        """When a file's text was last stored (seconds since the epoch), if ever."""
        row = self._conn.execute("SELECT max(indexed_at) FROM files").fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def _select_ids(self, sql: str, ids: Iterable[int]) -> Iterator[tuple[Any, ...]]:
        """Rows of ``sql`` (whose ``{}`` is the id list) for the ids, 500 at a time."""
        for batch in _batched(list(ids), 500):
            yield from self._conn.execute(sql.format(",".join("?" * len(batch))), batch)

    def keyword_search(
        self,
        match: str,
        limit: int,
        weights: tuple[float, float] = (1.0, 1.0),
        *,
        scored: int | None = None,
        files: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Chunk ids matching an FTS5 expression with their BM25 score, best first.

        FTS5's ``bm25()`` is negative, better matches more so; it is returned negated, so
        a larger score is a better match and every score is positive. With ``scored``,
        only the first that many matching rows (by id) are scored, not every one. With
        ``files``, only chunks of those file ids match (a search's scope).
        """
        where, scope = _within(files)
        source = f"chunks_fts WHERE chunks_fts MATCH ?{where}"
        if scored is not None:
            source = (
                "(SELECT rowid, -bm25(chunks_fts, ?, ?) AS score FROM chunks_fts"
                f" WHERE chunks_fts MATCH ?{where} LIMIT {int(scored)})"
            )
            sql = f"SELECT rowid, score FROM {source} ORDER BY score DESC LIMIT ?"
        else:
            sql = (
                f"SELECT rowid, -bm25(chunks_fts, ?, ?) AS score FROM {source}"
                " ORDER BY score DESC LIMIT ?"
            )
        rows = self._conn.execute(sql, (weights[0], weights[1], match, *scope, limit))
        return [(int(r[0]), float(r[1])) for r in rows]

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
                        (f'"{term}"', first, last),
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

    def cjk_search(
        self, match: str, limit: int, files: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """Like ``keyword_search``, over the CJK bigrams (``cjk.query_grams``)."""
        where, scope = _within(files)
        rows = self._conn.execute(
            "SELECT rowid, -bm25(chunks_cjk) AS score FROM chunks_cjk "
            f"WHERE chunks_cjk MATCH ?{where} ORDER BY score DESC LIMIT ?",
            (match, *scope, limit),
        )
        return [(int(r[0]), float(r[1])) for r in rows]

    def cjk_file_search(
        self, match: str, limit: int, files: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """The best ``limit`` files (ids) by BM25 over the bigrams of their whole text
        (``grams.py``), best first; none from a catalog made before that table."""
        where, scope = "", ""
        if files is not None:
            where, scope = (
                " AND +rowid IN (SELECT value FROM json_each(?))",
                json.dumps(list(files)),
            )
        try:
            rows = self._conn.execute(
                "SELECT rowid, -bm25(files_cjk) AS score FROM files_cjk "
                f"WHERE files_cjk MATCH ?{where} ORDER BY score DESC LIMIT ?",
                (match, scope, limit) if scope else (match, limit),
            ).fetchall()
        except sqlite3.OperationalError as e:  # "no such table": opened read-only, not yet made
            if "files_cjk" not in str(e):
                raise
            return []
        return [(int(r[0]), float(r[1])) for r in rows]

    def first_chunks(self, file_ids: Sequence[int]) -> dict[int, int]:
        """For each given file id, the id of its first chunk."""
        rows = self._select_ids(
            "SELECT file_id, id FROM chunks WHERE chunk_index = 0 AND file_id IN ({})", file_ids
        )
        return {int(f): int(c) for f, c in rows}

    def head_ids(self, ids: Sequence[int]) -> dict[int, int]:
        """For each given chunk id, the id of the first chunk of the same file."""
        rows = self._select_ids(
            "SELECT c.id, h.id FROM chunks c JOIN chunks h"
            " ON h.file_id = c.file_id AND h.chunk_index = 0 WHERE c.id IN ({})",
            ids,
        )
        return {int(c): int(h) for c, h in rows}

    def code_chunks(self, ids: Sequence[int]) -> frozenset[int]:
        """The given chunk ids whose file is source code (``formats.is_code``) or whose
        text reads as code in a file that may hold some (``formats.may_read_as_code``)."""
        rows = self._select_ids(
            "SELECT c.id, f.path, c.text FROM chunks c JOIN files f ON f.id = c.file_id"
            " WHERE c.id IN ({})",
            ids,
        )
        return frozenset(
            int(c)
            for c, path, text in rows
            if is_code(path) or (may_read_as_code(path) and reads_as_code(text))
        )

    def stats(self) -> CatalogStats:
        row = self._conn.execute(
            "SELECT (SELECT count(*) FROM files WHERE status = 'ok'),"
            " (SELECT count(*) FROM files WHERE status = 'failed'),"
            " (SELECT count(*) FROM chunks),"
            " (SELECT coalesce(max(id), 0) FROM chunks)"
        ).fetchone()
        return CatalogStats(int(row[0]), int(row[1]), int(row[2]), int(row[3]))


@dataclass(frozen=True, slots=True)
class CatalogStats:
    files_indexed: int
    files_failed: int
    chunks: int
    max_chunk_id: int  # grows with every insert; with ``chunks``, tells when chunks changed


def _within(files: Sequence[int] | None) -> tuple[str, tuple[str, ...]]:
    """The SQL (and its parameter) that keeps an FTS5 match to chunks of ``files``."""
    if files is None:
        return "", ()
    # "+rowid": not a constraint FTS5 is offered, so it matches once and the rows are then
    # filtered; as a rowid constraint, it ran the match once per chunk of the scope (42 ms
    # instead of 1.4 for a scope of 1,000 chunks of 100k).
    sql = " AND +rowid IN (SELECT id FROM chunks WHERE file_id IN (SELECT value FROM json_each(?)))"
    return sql, (json.dumps(list(files)),)


def _batched(items: list[int], n: int) -> Iterator[list[int]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]
