"""CJK bigrams in the catalog, for passages and for whole documents.

Each chunk with CJK text has a row of its bigrams in ``chunks_cjk`` (the passage-level
keyword channel, see ``text/cjk.py``), and each such file one row in ``files_cjk``: the
bigrams of its whole text, the overlap of neighbouring chunks counted once. A long CJK
query (a case description, a whole question) is matched against those too, and a file
that holds the whole description outranks one passage that holds a part of it twice.
A plain BM25 over the bigrams of whole documents scores nDCG@10 0.60 on LeCaRD, where
the passages alone reach 0.44 (docs/benchmarks.md).

Both tables are contentless (FTS5 ``content=''``): they keep the index of the pairs, not
the pairs' text, which was twice the size of the text itself. A contentless row is
deleted by giving FTS5 the values it was made of, so ``drop_grams`` makes them again
from the chunks (``store_grams`` made them from the same rows) before those are deleted.
A row's pairs are stored sorted: a pair is searched alone, never as a phrase, so where
it stood is of no use, and a pair's repeats stored side by side take a byte or so each
where, spread over the text, they took two or three.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from micro_rag_mcp.core.records import NewChunk
from micro_rag_mcp.local.catalog.packed import unpack
from micro_rag_mcp.text.cjk import bigrams, has_cjk, whole_text

# The meta key a catalog is made with, which says every file's row in files_cjk is
# written (``schema.SCHEMA`` makes the table; every catalog of this version has them).
FILE_GRAMS_KEY = "file_grams"


def store_grams(conn: sqlite3.Connection, file_id: int, chunks: Sequence[NewChunk]) -> None:
    """Write the bigram rows of one file's just stored ``chunks`` and of the whole file,
    in the caller's transaction; a file without CJK text gets none. The file's old rows
    are gone already (``drop_grams``)."""
    if not any(has_cjk(c.title) or has_cjk(c.text) for c in chunks):
        return
    rows = chunk_rows(conn, file_id)
    conn.executemany(
        "INSERT INTO chunks_cjk(rowid, grams) VALUES (?, ?)",
        ((cid, chunk_grams(title, text)) for cid, title, text, _, _ in rows),
    )
    conn.execute("INSERT INTO files_cjk(rowid, grams) VALUES (?, ?)", (file_id, file_grams(rows)))


def drop_grams(conn: sqlite3.Connection, file_id: int) -> None:
    """Delete the bigram rows of one file and of its chunks, in the caller's transaction,
    while its chunks are still stored: each row is deleted with the pairs it holds."""
    rows = chunk_rows(conn, file_id)
    held = {
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM chunks_cjk_docsize WHERE id IN"
            " (SELECT id FROM chunks WHERE file_id = ?)",
            (file_id,),
        )
    }
    conn.executemany(
        "INSERT INTO chunks_cjk(chunks_cjk, rowid, grams) VALUES ('delete', ?, ?)",
        ((cid, chunk_grams(title, text)) for cid, title, text, _, _ in rows if cid in held),
    )
    if conn.execute("SELECT 1 FROM files_cjk_docsize WHERE id = ?", (file_id,)).fetchone():
        conn.execute(
            "INSERT INTO files_cjk(files_cjk, rowid, grams) VALUES ('delete', ?, ?)",
            (file_id, file_grams(rows)),
        )


def chunk_grams(title: str, text: str) -> str:
    """The pairs of one chunk's row in ``chunks_cjk``, sorted."""
    return " ".join(sorted(bigrams(f"{title}\n{text}").split()))


def file_grams(rows: Sequence[tuple[Any, ...]]) -> str:
    """The pairs of one file's row in ``files_cjk``, sorted: those of its whole text."""
    return " ".join(sorted(bigrams(whole_text(rows)).split()))


def chunk_rows(conn: sqlite3.Connection, file_id: int) -> list[tuple[Any, ...]]:
    """Id, title, text (plain), start and end of one file's chunks, in order."""
    rows = conn.execute(
        "SELECT id, title, text, char_start, char_end FROM chunks WHERE file_id = ?"
        " ORDER BY chunk_index",
        (file_id,),
    )
    return [(cid, title, unpack(text), start, end) for cid, title, text, start, end in rows]


def merge_pairs(conn: sqlite3.Connection) -> None:
    """Merge each table of pairs into one b-tree, in the caller's transaction. A file
    stored is a b-tree of its own, merged with others a few at a time; until all are
    one, a pair is listed once in each (JaQuAD's paragraphs: 3.9x the text, 3.4x
    merged). A pass that rewrote much of the folder calls it (``passes.writer``)."""
    for table in ("chunks_cjk", "files_cjk"):
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
