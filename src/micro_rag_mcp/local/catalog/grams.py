"""CJK bigrams in the catalog, for passages and for whole documents.

Each chunk with CJK text has a row of its bigrams in ``chunks_cjk`` (the passage-level
keyword channel, see ``text/cjk.py``), and each such file one row in ``files_cjk``: the
bigrams of its whole text, the overlap of neighbouring chunks counted once. A long CJK
query (a case description, a whole question) is matched against those too, and a file
that holds the whole description outranks one passage that holds a part of it twice.
A plain BM25 over the bigrams of whole documents scores nDCG@10 0.60 on LeCaRD, where
the passages alone reach 0.44 (docs/benchmarks.md).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from typing import Any

from micro_rag_mcp.core.records import NewChunk
from micro_rag_mcp.text.cjk import bigrams, has_cjk, whole_text

logger = logging.getLogger(__name__)

# The bigrams of each file's whole text (rowid = file id), made beside the catalog's own.
FILE_GRAMS_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS files_cjk USING fts5(grams, tokenize='unicode61');
CREATE TRIGGER IF NOT EXISTS files_cjk_delete AFTER DELETE ON files BEGIN
    DELETE FROM files_cjk WHERE rowid = old.id;
END;
"""

# The meta key that says every file's row in files_cjk is written (a catalog made before
# the table gets them once, as it is opened for writing).
FILE_GRAMS_KEY = "file_grams"


def store_grams(conn: sqlite3.Connection, file_id: int, chunks: Sequence[NewChunk]) -> None:
    """Write the bigram rows of one file's just stored ``chunks`` and of the whole file,
    in the caller's transaction; a file without CJK text gets none (and loses any)."""
    conn.execute("DELETE FROM files_cjk WHERE rowid = ?", (file_id,))
    if not any(has_cjk(c.title) or has_cjk(c.text) for c in chunks):
        return
    rows = _chunk_rows(conn, file_id)
    conn.executemany(
        "INSERT INTO chunks_cjk(rowid, grams) VALUES (?, ?)",
        ((cid, bigrams(f"{title}\n{text}")) for cid, title, text, _, _ in rows),
    )
    _store_file_row(conn, file_id, rows)


def backfill_file_grams(conn: sqlite3.Connection) -> int:
    """Write the ``files_cjk`` row of every file whose chunks have CJK rows (a catalog
    made before the table); return how many files got one."""
    files = [
        int(r[0])
        for r in conn.execute(
            "SELECT DISTINCT c.file_id FROM chunks_cjk g JOIN chunks c ON c.id = g.rowid"
        )
    ]
    for file_id in files:
        conn.execute("DELETE FROM files_cjk WHERE rowid = ?", (file_id,))
        _store_file_row(conn, file_id, _chunk_rows(conn, file_id))
    if files:
        logger.info("the bigrams of %d whole files with CJK text were written", len(files))
    return len(files)


def _chunk_rows(conn: sqlite3.Connection, file_id: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT id, title, text, char_start, char_end FROM chunks WHERE file_id = ?"
        " ORDER BY chunk_index",
        (file_id,),
    ).fetchall()


def _store_file_row(
    conn: sqlite3.Connection, file_id: int, rows: Sequence[tuple[Any, ...]]
) -> None:
    conn.execute(
        "INSERT INTO files_cjk(rowid, grams) VALUES (?, ?)", (file_id, bigrams(whole_text(rows)))
    )
