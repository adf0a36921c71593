"""The catalog connection: opening (creating it, or refusing another version), transactions,
the meta values and the file reads; its writes, chunk reads, keyword search and term
statistics are parts it holds (``writes``, ``chunks``, ``keywords``, ``terms``)."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import micro_rag_mcp.local.catalog.grams as grams
from micro_rag_mcp.core.diskspace import is_disk_full
from micro_rag_mcp.core.errors import IndexWriteError
from micro_rag_mcp.core.records import FileRecord, StoredChunk
from micro_rag_mcp.local.catalog.chunks import ChunkReads
from micro_rag_mcp.local.catalog.keywords import KeywordSearch
from micro_rag_mcp.local.catalog.packed import stored_chunk
from micro_rag_mcp.local.catalog.schema import (
    BUMP_GENERATION,
    INDEX_VERSION,
    PAGE_SIZE,
    SCHEMA,
    CatalogCorrupt,
    OtherVersion,
    connect,
    is_damage,
)
from micro_rag_mcp.local.catalog.terms import TermStats
from micro_rag_mcp.local.catalog.words import MARK_KEY
from micro_rag_mcp.local.catalog.writes import FileWrites

logger = logging.getLogger(__name__)


class Catalog:
    """A connection to the catalog database. One per thread of work."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self.created = False  # this open made a new, empty catalog
        self.immutable = False  # opened read-only as a file that never changes
        self.writes = FileWrites(conn, self.transaction)
        self.chunks = ChunkReads(conn)
        self.keywords = KeywordSearch(conn)
        self.terms = TermStats(conn)

    @classmethod
    def open(cls, path: Path, *, check: bool = False) -> Catalog:
        """Open (creating if needed) the catalog.

        Raises CatalogCorrupt only when the file itself is damaged or foreign, and
        ``OtherVersion`` for a catalog of another index version (nothing is written to
        it: ``local.rebuild`` builds its successor beside it); any other failure (a full
        disk, no permission, a lock) is an IndexWriteError, because moving a healthy
        catalog aside for those would throw the index away.
        """
        found = version_of(path)
        if found is not None and found != INDEX_VERSION:
            raise OtherVersion(f"the catalog {path} is of index version {found}")
        conn = connect(path)
        try:
            if check:
                row = conn.execute("PRAGMA quick_check").fetchone()
                if row is None or row[0] != "ok":
                    raise CatalogCorrupt(
                        f"integrity check failed: {row[0] if row else 'no answer'}"
                    )
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a new catalog's only
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # so is this (merge_pairs)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.executescript(SCHEMA)
            catalog = cls(conn, path)
            if catalog.get_meta("index_version") is None:
                with catalog.transaction():
                    catalog.set_meta("index_version", str(INDEX_VERSION))
                    catalog.set_meta("catalog_id", uuid.uuid4().hex)
                    catalog.set_meta(grams.FILE_GRAMS_KEY, "1")
                    catalog.set_meta(MARK_KEY, "1")
                catalog.created = True
            return catalog
        except CatalogCorrupt:
            conn.close()
            raise
        except sqlite3.DatabaseError as e:
            conn.close()
            if is_damage(e):
                raise CatalogCorrupt(str(e)) from e
            if is_disk_full(e, path.parent):  # said as a pass's writes say it
                raise IndexWriteError(f"cannot write the index in {path.parent}: {e}") from e
            raise IndexWriteError(f"cannot open the catalog {path}: {e}") from e

    @classmethod
    def open_reader(cls, path: Path) -> Catalog:
        """A connection for searching: never writes, never creates.

        A catalog in a folder this process cannot write (read-only mount, full disk) is
        opened immutable, which needs no write access at all.
        """
        if not path.exists():
            raise CatalogCorrupt("catalog does not exist yet")
        try:
            return cls._checked_reader(connect(path), path)
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
        conn = connect(self.path)
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
            self._conn.execute(BUMP_GENERATION)
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

    def merge_pairs(self) -> None:
        """Merge the CJK pairs' b-trees (``grams.merge_pairs``) and give the pages they
        freed back to the file system."""
        with self.transaction() as conn:
            grams.merge_pairs(conn)
        # As a script: a statement the module runs steps once, freeing one page.
        self._conn.executescript("PRAGMA incremental_vacuum;")

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
        return [stored_chunk(r) for r in rows]

    def last_indexed_at(self) -> float | None:
        """When a file's text was last stored (seconds since the epoch), if ever."""
        row = self._conn.execute("SELECT max(indexed_at) FROM files").fetchone()
        return None if row is None or row[0] is None else float(row[0])

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


def stored_meta(path: Path) -> dict[str, str] | None:
    """A catalog's meta table, read without writing a byte: None if there is no catalog,
    SQLite cannot read it (``Catalog.open``'s check then says why) or it has no tables
    yet; an empty dict for a database without our meta table or with an empty one."""
    if not path.is_file():
        return None
    uri = path.resolve().as_uri()
    for mode in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(f"{uri}?{mode}", uri=True, timeout=30.0)
            try:
                if not conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    return None
                return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
            finally:
                conn.close()
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return {}
        except sqlite3.DatabaseError:
            return None
    return None


def version_of(path: Path) -> int | str | None:
    """The index version a catalog records (``stored_meta``): None if it records nothing
    yet (there is none, or it is being made), "" if it records no version (another
    format), else the version."""
    meta = stored_meta(path)
    if not meta:
        return None
    value = meta.get("index_version", "")
    return int(value) if value.isdigit() else value
