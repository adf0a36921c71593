"""``core.listing.FileListing`` over a Milvus store's files collection.

Milvus keeps no counter of writes, so the version of the whole store is the files'
versions themselves: one scan of the files collection (a row per file, not per chunk),
so it is looked at every five seconds rather than four times a second.
"""

from __future__ import annotations

from micro_rag_mcp.core.listing import IndexedFile
from micro_rag_mcp.milvus.index import MilvusIndex


class MilvusListing:
    poll_s = 5.0  # each look scans the files collection

    def __init__(self, index: MilvusIndex) -> None:
        self._index = index

    def files(self, prefix: str = "", after: str = "", limit: int = 100) -> list[IndexedFile]:
        if not self._index.collections.exists():
            return []
        rows = self._index.files(status="ok")
        paths = sorted(p for p in rows if p > after and p.startswith(prefix))[:limit]
        return [
            IndexedFile(p, rows[p].record.ext, rows[p].record.size, rows[p].record.mtime_ns,
                        rows[p].indexed_at)
            for p in paths
        ]  # fmt: skip

    def version(self) -> object:
        return tuple(sorted(self.file_versions().items()))

    def file_versions(self) -> dict[str, str]:
        if not self._index.collections.exists():
            return {}
        return {p: f"{r.version}" for p, r in self._index.files(status="ok").items()}

    def close(self) -> None:
        return None
