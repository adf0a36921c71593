"""The catalog's writes: a file's chunks stored, touched, removed or moved; the pending
paths a watcher hands to the pass that holds the index; stamps forgotten so that files
are read again. Each is one transaction (``Catalog.transaction``)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import micro_rag_mcp.local.catalog.grams as grams
from micro_rag_mcp.core.records import FileRecord, NewChunk
from micro_rag_mcp.local.catalog.packed import pack
from micro_rag_mcp.local.catalog.words import MARK_KEY, stored_words
from micro_rag_mcp.text.vector_text import vector_key


class FileWrites:
    """The writes of one catalog connection."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        transaction: Callable[[], AbstractContextManager[sqlite3.Connection]],
    ) -> None:
        self._conn = conn
        self._transaction = transaction

    def store_file(self, record: FileRecord, chunks: Sequence[NewChunk]) -> list[int]:
        """Replace everything known of one file in one transaction; return the vector keys
        of its old chunks."""
        with self._transaction() as conn:
            old = self._delete_chunks(conn, record.path)
            file_id = self._upsert_file(conn, record)
            conn.executemany(
                "INSERT INTO chunks(file_id, chunk_index, char_start, char_end, line_start, "
                "line_end, page, title, text, section, locator, vkey)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (
                        file_id,
                        c.chunk_index,
                        c.char_start,
                        c.char_end,
                        c.line_start,
                        c.line_end,
                        c.page,
                        c.title,
                        pack(c.text),
                        c.section,
                        c.locator,
                        vector_key(c.title, c.text),
                    )
                    for c in chunks
                ),
            )
            conn.executemany(
                "INSERT INTO chunks_fts(rowid, title, text) VALUES (?, ?, ?)",
                _words(conn, grams.chunk_rows(conn, file_id)),
            )
            grams.store_grams(conn, file_id, chunks)
        return old

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        """Record a new stamp for a file whose text did not change."""
        with self._transaction() as conn:
            conn.execute(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", (size, mtime_ns, path)
            )

    def remove_file(self, path: str) -> list[int]:
        """Forget a file and its chunks in one transaction; return their vector keys."""
        with self._transaction() as conn:
            old = self._delete_chunks(conn, path)
            conn.execute("DELETE FROM files WHERE path = ?", (path,))
        return old

    def move_files(self, moves: Sequence[tuple[str, str]]) -> None:
        """Give recorded files new paths, (old, new) pairs, in one transaction; their chunks
        go with them."""
        with self._transaction() as conn:
            conn.executemany("UPDATE files SET path = ? WHERE path = ?", ((n, o) for o, n in moves))

    def add_pending(self, paths: Iterable[str]) -> None:
        """Note changed paths (relative; a folder stands for what is under it) for the pass
        that holds the index to take."""
        with self._transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO pending(path) VALUES (?)", ((p,) for p in paths)
            )

    def take_pending(self) -> list[str]:
        """The noted paths, removed from the note in the same transaction."""
        if self._conn.execute("SELECT 1 FROM pending LIMIT 1").fetchone() is None:
            return []  # the usual answer, without a write
        with self._transaction() as conn:
            paths = [str(r[0]) for r in conn.execute("SELECT path FROM pending ORDER BY path")]
            conn.execute("DELETE FROM pending")
        return paths

    def forget_stamps(self) -> int:
        """Make every file look changed, so the next reindex reads it again; how many."""
        with self._transaction() as conn:
            return conn.execute("UPDATE files SET size = -1, checksum = NULL").rowcount

    @staticmethod
    def _delete_chunks(conn: sqlite3.Connection, path: str) -> list[int]:
        """Delete one file's chunks and its bigram rows; return the chunks' vector keys."""
        row = conn.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if row is None:
            return []
        file_id = int(row[0])
        keys = [
            int(r[0]) for r in conn.execute("SELECT vkey FROM chunks WHERE file_id = ?", (file_id,))
        ]
        if keys:
            conn.executemany(
                "INSERT INTO chunks_fts(chunks_fts, rowid, title, text) VALUES ('delete', ?, ?, ?)",
                _words(conn, grams.chunk_rows(conn, file_id)),
            )
            grams.drop_grams(conn, file_id)
            conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))
        return keys

    @staticmethod
    def _upsert_file(conn: sqlite3.Connection, r: FileRecord) -> int:
        conn.execute(
            "INSERT INTO files(path, ext, size, mtime_ns, checksum, status, error, indexed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
            "ext = excluded.ext, size = excluded.size, mtime_ns = excluded.mtime_ns, "
            "checksum = excluded.checksum, status = excluded.status, error = excluded.error, "
            "indexed_at = excluded.indexed_at",
            (r.path, r.ext, r.size, r.mtime_ns, r.checksum, r.status, r.error, time.time()),
        )
        row = conn.execute("SELECT id FROM files WHERE path = ?", (r.path,)).fetchone()
        return int(row[0])


def _words(
    conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]
) -> Iterator[tuple[int, str, str]]:
    """The word index's row of each chunk row (``grams.chunk_rows``): id, title, text, as
    this catalog stores CJK runs (``words.py``)."""
    marked = conn.execute("SELECT 1 FROM meta WHERE key = ?", (MARK_KEY,)).fetchone()
    words = stored_words(marked is not None)
    for cid, title, text, *_ in rows:
        yield int(cid), words(title), words(text)
