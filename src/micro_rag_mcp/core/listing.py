"""The indexed files as a list a client pages through, and what tells that they changed.

``FileListing`` is what the MCP resources need of a store: a page of indexed files (in
path order, from a cursor), a cheap token that changes whenever the index does, and each
file's version, so a change can be named by path. ``CatalogListing`` reads the embedded
index's catalog through one read-only connection of its own.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt


@dataclass(frozen=True, slots=True)
class IndexedFile:
    path: str
    ext: str
    size: int  # bytes on disk when indexed; -1 when its stamp was too recent to trust
    mtime_ns: int
    indexed_at: float  # seconds since the epoch


class FileListing(Protocol):
    poll_s: float  # how often ``version`` is worth asking

    def files(self, prefix: str = "", after: str = "", limit: int = 100) -> list[IndexedFile]: ...

    def version(self) -> object:
        """A value that changes whenever any file's indexed state does (cheap to ask)."""
        ...

    def file_versions(self) -> dict[str, str]:
        """Each indexed file's version: equal as long as its indexed text is the same."""
        ...

    def close(self) -> None: ...


class CatalogListing:
    """``FileListing`` over the catalog at ``path``; nothing while there is no catalog."""

    poll_s = 0.25  # one indexed row of the meta table

    def __init__(self, path: Path) -> None:
        self._path = path
        self._catalog: Catalog | None = None
        self._lock = threading.Lock()

    def _reader(self) -> Catalog | None:
        if self._catalog is None:
            try:
                self._catalog = Catalog.open_reader(self._path)
            except CatalogCorrupt:
                return None
        return self._catalog

    def files(self, prefix: str = "", after: str = "", limit: int = 100) -> list[IndexedFile]:
        with self._lock:
            catalog = self._reader()
            rows = catalog.indexed_files(prefix, after, limit) if catalog is not None else []
        return [IndexedFile(str(p), str(e), int(s), int(m), float(t)) for p, e, s, m, t in rows]

    def version(self) -> object:
        with self._lock:
            catalog = self._reader()
            return catalog.generation() if catalog is not None else None

    def file_versions(self) -> dict[str, str]:
        with self._lock:
            catalog = self._reader()
            if catalog is None:
                return {}
            with catalog.snapshot():
                records = catalog.files()
        return {p: str(r.checksum) for p, r in records.items() if r.status == "ok"}

    def close(self) -> None:
        with self._lock:
            if self._catalog is not None:
                self._catalog.close()
                self._catalog = None
