"""The catalog: the one truth of the index, in SQLite.

Files, their chunks (text and citation positions) and the run identity live here. An
FTS5 table over the chunk text is the keyword channel. Every change of one file is one
transaction, so a reader (in this process or another) sees a file's old chunks or its
new ones, never a mix. Chunk ids come from AUTOINCREMENT and are never reused. Each chunk
records the key of its vector (``vector_text.vector_key``, a hash of its embedded text):
the FAISS index (derived data) is keyed by it and reconciled against this table by key
alone, so a vector outlives a chunk id and serves every chunk of its text.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from micro_rag_mcp.core.errors import IndexWriteError, MicroRagError
from micro_rag_mcp.core.records import FileRecord, NewChunk
from micro_rag_mcp.local import grams
from micro_rag_mcp.local.queries import CatalogQueries
from micro_rag_mcp.text.vector_text import vector_key

logger = logging.getLogger(__name__)

SCHEMA_VERSION = "4"
MIGRATES_FROM = frozenset({"3"})  # older schemas this one upgrades in place (see _migrate)

_SCHEMA = """
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
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, text,
    content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, title, text)
    VALUES ('delete', old.id, old.title, old.text);
END;
-- CJK bigrams of the chunks that have CJK text (cjk.py); rowid = chunk id.
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_cjk USING fts5(grams, tokenize='unicode61');
-- Paths a watcher saw change while another pass held the index: the pass that holds it
-- takes them between two files, so a change never waits for a long pass to end.
CREATE TABLE IF NOT EXISTS pending (path TEXT PRIMARY KEY);
CREATE TRIGGER IF NOT EXISTS chunks_cjk_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunks_cjk WHERE rowid = old.id;
END;
COMMIT;
"""


# Every write transaction ends with this, so a reader can tell that the catalog changed.
_BUMP_GENERATION = (
    "INSERT INTO meta(key, value) VALUES ('generation', '1') "
    "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
)


class CatalogCorrupt(MicroRagError):
    """The catalog file exists but is not a usable database."""


_DAMAGE_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB


def is_damage(e: sqlite3.Error) -> bool:
    """Whether SQLite says the file itself is damaged (not busy, full or forbidden)."""
    code = getattr(e, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _DAMAGE_CODES


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


class Catalog(CatalogQueries):
    """A connection to the catalog database. One per thread of work."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self.created = False  # this open made a new, empty catalog
        self.immutable = False  # opened read-only as a file that never changes

    # -- opening -------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, *, check: bool = False) -> Catalog:
        """Open (creating if needed) the catalog.

        Raises CatalogCorrupt only when the file itself is damaged or foreign; any other
        failure (a full disk, no permission, a lock) is an IndexWriteError, because
        moving a healthy catalog aside for those would throw the index away.
        """
        conn = _connect(path)
        try:
            if check:
                row = conn.execute("PRAGMA quick_check").fetchone()
                if row is None or row[0] != "ok":
                    raise CatalogCorrupt(
                        f"integrity check failed: {row[0] if row else 'no answer'}"
                    )
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.executescript(_SCHEMA)
            conn.executescript(grams.FILE_GRAMS_SCHEMA)
            catalog = cls(conn, path)
            stored = catalog.get_meta("schema_version")
            if stored is None:
                with catalog.transaction():
                    catalog.set_meta("schema_version", SCHEMA_VERSION)
                    catalog.set_meta("catalog_id", uuid.uuid4().hex)
                    catalog.set_meta(grams.FILE_GRAMS_KEY, "1")
                catalog.created = True
            elif stored in MIGRATES_FROM:
                catalog._migrate(stored)
            elif stored != SCHEMA_VERSION:
                raise CatalogCorrupt(f"schema version {stored}, expected {SCHEMA_VERSION}")
            conn.execute("CREATE INDEX IF NOT EXISTS chunks_by_key ON chunks(vkey)")
            if catalog.get_meta(grams.FILE_GRAMS_KEY) is None:  # made before files_cjk
                try:  # a full disk, a busy lock: the next open tries again
                    with catalog.transaction() as tx:
                        grams.backfill_file_grams(tx)
                        catalog.set_meta(grams.FILE_GRAMS_KEY, "1")
                except sqlite3.OperationalError as e:
                    logger.warning("whole-file CJK rows not written (%s)", e)
            return catalog
        except CatalogCorrupt:
            conn.close()
            raise
        except sqlite3.DatabaseError as e:
            conn.close()
            if is_damage(e):
                raise CatalogCorrupt(str(e)) from e
            raise IndexWriteError(f"cannot open the catalog {path}: {e}") from e

    def _migrate(self, stored: str) -> None:
        """Upgrade a catalog of schema 3 in place, in one transaction: every chunk gets
        the key of its vector. Its vectors, keyed by chunk id, are re-keyed by
        ``vector_cache`` (``vector_ids`` in meta says which kind a vector file holds)."""
        logger.info("upgrading catalog %s from schema %s to %s", self.path, stored, SCHEMA_VERSION)
        with self.transaction() as conn:
            columns = {r[1] for r in conn.execute("PRAGMA table_info(chunks)")}
            if "vkey" not in columns:
                conn.execute("ALTER TABLE chunks ADD COLUMN vkey INTEGER NOT NULL DEFAULT 0")
            rows = conn.execute("SELECT id, title, text FROM chunks").fetchall()
            conn.executemany(
                "UPDATE chunks SET vkey = ? WHERE id = ?",
                ((vector_key(title, text), cid) for cid, title, text in rows),
            )
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (SCHEMA_VERSION,)
            )

    @classmethod
    def open_reader(cls, path: Path) -> Catalog:
        """A connection for searching: never writes, never creates.

        A catalog in a folder this process cannot write (read-only mount, full disk) is
        opened immutable, which needs no write access at all.
        """
        if not path.exists():
            raise CatalogCorrupt("catalog does not exist yet")
        try:
            return cls._checked_reader(_connect(path), path)
        except sqlite3.OperationalError as e:
            if is_damage(e):
                raise CatalogCorrupt(str(e)) from e
            logger.debug("opening %s for reading failed (%s); trying immutable", path, e)
        uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
        conn = sqlite3.connect(
            uri, uri=True, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        catalog = cls._checked_reader(conn, path)
        catalog.immutable = True
        return catalog

    @classmethod
    def _checked_reader(cls, conn: sqlite3.Connection, path: Path) -> Catalog:
        try:
            conn.execute("PRAGMA query_only = 1")
            ready = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chunks_fts'"
            ).fetchone()
        except sqlite3.DatabaseError as e:
            conn.close()
            if is_damage(e):
                raise CatalogCorrupt(str(e)) from e
            raise
        if ready is None:
            conn.close()
            raise CatalogCorrupt("catalog is not created yet")
        return cls(conn, path)

    def another(self) -> Catalog:
        """A second connection to this catalog, for another thread of work."""
        conn = _connect(self.path)
        conn.execute("PRAGMA synchronous = FULL")  # a setting of each connection
        return Catalog(conn, self.path)

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any exception; bumps ``generation``."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
            self._conn.execute(_BUMP_GENERATION)
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
            raise

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees one committed state."""
        self._conn.execute("BEGIN")
        try:
            yield self._conn
        finally:
            self._conn.execute("COMMIT")

    # -- metadata ------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def generation(self) -> tuple[str | None, int]:
        """What changes whenever a write transaction commits, in any process: the catalog's
        id and a count of its write transactions. One indexed row, so cheap to ask."""
        rows = dict(
            self._conn.execute(
                "SELECT key, value FROM meta WHERE key IN ('catalog_id', 'generation')"
            ).fetchall()
        )
        return rows.get("catalog_id"), int(rows.get("generation", 0))

    def set_meta(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # -- files -----------------------------------------------------------------------

    def store_file(self, record: FileRecord, chunks: Sequence[NewChunk]) -> list[int]:
        """Replace everything known of one file in one transaction; return the vector keys
        of its old chunks."""
        with self.transaction() as conn:
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
                        c.text,
                        c.section,
                        c.locator,
                        vector_key(c.title, c.text),
                    )
                    for c in chunks
                ),
            )
            grams.store_grams(conn, file_id, chunks)
        return old

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        """Record a new stamp for a file whose text did not change."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", (size, mtime_ns, path)
            )

    def remove_file(self, path: str) -> list[int]:
        """Forget a file and its chunks in one transaction; return their vector keys."""
        with self.transaction() as conn:
            old = self._delete_chunks(conn, path)
            conn.execute("DELETE FROM files WHERE path = ?", (path,))
        return old

    def move_files(self, moves: Sequence[tuple[str, str]]) -> None:
        """Give recorded files new paths, (old, new) pairs, in one transaction; their chunks
        go with them."""
        with self.transaction() as conn:
            conn.executemany("UPDATE files SET path = ? WHERE path = ?", ((n, o) for o, n in moves))

    def add_pending(self, paths: Iterable[str]) -> None:
        """Note changed paths (relative; a folder stands for what is under it) for the pass
        that holds the index to take."""
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO pending(path) VALUES (?)", ((p,) for p in paths)
            )

    def take_pending(self) -> list[str]:
        """The noted paths, removed from the note in the same transaction."""
        if self._conn.execute("SELECT 1 FROM pending LIMIT 1").fetchone() is None:
            return []  # the usual answer, without a write
        with self.transaction() as conn:
            paths = [str(r[0]) for r in conn.execute("SELECT path FROM pending ORDER BY path")]
            conn.execute("DELETE FROM pending")
        return paths

    def forget_stamps(self, suffixes: Sequence[str] | None = None) -> int:
        """Make every file (of the lowercase ``suffixes``, if given) look changed, so the
        next reindex reads it again; how many."""
        of = "" if suffixes is None else f" WHERE ext IN ({','.join('?' * len(suffixes))})"
        with self.transaction() as conn:
            sql = f"UPDATE files SET size = -1, checksum = NULL{of}"
            return conn.execute(sql, tuple(suffixes or ())).rowcount

    @staticmethod
    def _delete_chunks(conn: sqlite3.Connection, path: str) -> list[int]:
        """Delete one file's chunks; return their vector keys."""
        keys = [
            int(r[0])
            for r in conn.execute(
                "SELECT c.vkey FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ?",
                (path,),
            )
        ]
        if keys:
            conn.execute(
                "DELETE FROM chunks WHERE file_id = (SELECT id FROM files WHERE path = ?)",
                (path,),
            )
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

    # -- chunks ----------------------------------------------------------------------
