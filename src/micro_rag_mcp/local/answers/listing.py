"""The embedded index's files, for a client to page through and follow (see core.listing)."""

from __future__ import annotations

import threading
from pathlib import Path

from micro_rag_mcp.core.listing import IndexedFile
from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt


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
