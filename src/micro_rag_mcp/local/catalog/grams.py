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

import sqlite3
from collections.abc import Sequence
from typing import Any

from micro_rag_mcp.core.records import NewChunk
from micro_rag_mcp.text.cjk import bigrams, has_cjk, whole_text

# The meta key a catalog is made with, which says every file's row in files_cjk is
# written (``schema.SCHEMA`` makes the table; every catalog of this version has them).
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
