"""The catalog's tables, its version and how a connection to it is made.

``SCHEMA`` creates every table an empty catalog needs; ``INDEX_VERSION``, the version of
the whole index's format, is recorded in its meta table when it is made. An index of
another version is never upgraded: it is rebuilt beside itself (``local.rebuild``). Every
write transaction ends with ``BUMP_GENERATION``, so a reader can tell that the catalog
changed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from micro_rag_mcp.core.errors import MicroRagError

# The format of the index folder: its catalog's tables, what a vector is keyed by and
# what the readers make of each format. Bumped with any change of these; an index of
# another version is rebuilt (reading every file, embedding only texts without a vector).
INDEX_VERSION = 6

# The page size a new catalog is made with. A chunk of CJK text is about 3 KB (3 bytes a
# character), and a 4 KiB page holds one such row and wastes the rest: 16 KiB pages hold
# five. A catalog keeps the page size it was made with (``rebuild`` gives a rebuilt one
# the old one's, which it is copied over).
PAGE_SIZE = 16384

SCHEMA = """
BEGIN;
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
    id         INTEGER PRIMARY KEY,
    path       TEXT NOT NULL UNIQUE,
    ext        TEXT NOT NULL,
    size       INTEGER NOT NULL,
    mtime_ns   INTEGER NOT NULL,
    checksum   TEXT,
    status     TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    error      TEXT,
    indexed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id     INTEGER NOT NULL REFERENCES files(id),
    chunk_index INTEGER NOT NULL,
    char_start  INTEGER NOT NULL,
    char_end    INTEGER NOT NULL,
    line_start  INTEGER,
    line_end    INTEGER,
    page        INTEGER,
    title       TEXT NOT NULL DEFAULT '',
    text        TEXT NOT NULL,
    section     TEXT,
    locator     TEXT,
    vkey        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chunks_by_file ON chunks(file_id, chunk_index);
CREATE INDEX IF NOT EXISTS chunks_by_key ON chunks(vkey);
-- The words of each chunk; rowid = chunk id. Contentless: chunks.text may be compressed
-- (packed.py), so writes.py gives it the plain text, and deletes a row with it.
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, text, content='',
    tokenize='porter unicode61 remove_diacritics 2'
);
-- CJK bigrams of the chunks that have CJK text (cjk.py); rowid = chunk id. Contentless:
-- grams.py deletes a row with the pairs it was made of.
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_cjk USING fts5(
    grams, tokenize='unicode61', content=''
);
-- Paths a watcher saw change while another pass held the index: the pass that holds it
-- takes them between two files, so a change never waits for a long pass to end.
CREATE TABLE IF NOT EXISTS pending (path TEXT PRIMARY KEY);
-- The bigrams of each file's whole text (grams.py); rowid = file id. Contentless too.
CREATE VIRTUAL TABLE IF NOT EXISTS files_cjk USING fts5(
    grams, tokenize='unicode61', content=''
);
COMMIT;
"""


BUMP_GENERATION = (
    "INSERT INTO meta(key, value) VALUES ('generation', '1') "
    "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
)


class CatalogCorrupt(MicroRagError):
    """The catalog file exists but is not a usable database."""


class OtherVersion(MicroRagError):
    """The catalog is of another index version: it is rebuilt, never written."""


_DAMAGE_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB


def is_damage(e: sqlite3.Error) -> bool:
    """Whether SQLite says the file itself is damaged (not busy, full or forbidden)."""
    code = getattr(e, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _DAMAGE_CODES


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn
