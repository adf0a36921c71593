"""One file's text as the store holds it, for ``search.reading.read_indexed``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from micro_rag_mcp.core.records import FileRecord, StoredChunk
from micro_rag_mcp.milvus.index import MilvusIndex
from micro_rag_mcp.milvus.rows import WRITING, stored_chunk


class StoreText:
    """One file's text as ``reading.read_indexed`` asks for it, from the store."""

    def __init__(self, index: MilvusIndex) -> None:
        self.index = index
        self._chunks: dict[str, list[StoredChunk]] = {}
        self._records: dict[str, FileRecord] = {}
        self._versions: dict[str, int] = {}

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        yield  # the file's version, read first, pins what follows

    def file_record(self, path: str) -> FileRecord | None:
        row = self.index.file_rows([path]).get(path)
        if row is None or row.record.status == WRITING:  # not yet written
            return None
        self._records[path], self._versions[path] = row.record, row.version
        return row.record

    def _all(self, path: str) -> list[StoredChunk]:
        if path not in self._chunks:
            record = self._records[path]
            rows = self.index.file_chunk_rows(path, self._versions[path])
            self._chunks[path] = [stored_chunk(r, record) for r in rows]
        return self._chunks[path]

    def file_extent(self, path: str) -> tuple[int, dict[int, tuple[int, int]]]:
        chunks = self._all(path)
        pages: dict[int, tuple[int, int]] = {}
        for c in chunks:
            if c.page is not None:
                low, high = pages.get(c.page, (c.char_start, c.char_end))
                pages[c.page] = (min(low, c.char_start), max(high, c.char_end))
        return max((c.char_end for c in chunks), default=0), pages

    def file_chunks(self, path: str, start: int, end: int) -> list[StoredChunk]:
        """As ``Catalog.file_chunks``: the chunks overlapping the range and the nearest
        one on either side."""
        chunks = self._all(path)
        first = max((c.chunk_index for c in chunks if c.char_end <= start), default=0)
        last = min((c.chunk_index for c in chunks if c.char_start >= end), default=1 << 62)
        return [c for c in chunks if first <= c.chunk_index <= last]

    def files(self) -> dict[str, FileRecord]:
        return {p: r.record for p, r in self.index.files().items() if r.record.status != WRITING}
