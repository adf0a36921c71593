"""The CJK pairs of whole files in Milvus (``NAME_grams``): written beside a file's chunks
under its version, read back a file at a time for a long CJK query's rescoring
(``whole_files``), and the samples of whole files that weigh each pair."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from micro_rag_mcp.milvus.collections import MilvusCollections
from micro_rag_mcp.milvus.requests import GRAMS_BATCH, batched, count_rows, ids_by, scan
from micro_rag_mcp.milvus.rows import in_filter

GramsRow = tuple[str, int, list[str]]  # a grams row: path, version, its pair words


class FilePairs:
    """The grams collection of one index."""

    def __init__(self, collections: MilvusCollections) -> None:
        self._c = collections

    def seal_grams(self) -> None:
        """Seal the grams collection alone (``seal``): rows a store made before it got."""
        self._c.call(lambda c: c.flush(self._c.grams))

    def delete_grams(self, paths: Sequence[str]) -> None:
        """Delete the grams rows of files (before they are written again)."""
        for batch in batched(paths):
            where = in_filter("path", batch)
            self._c.call(lambda c, w=where: c.delete(self._c.grams, filter=w))  # type: ignore[misc]

    def insert_grams(self, rows: Sequence[dict[str, Any]]) -> None:
        """Store grams rows (``rows.gram_rows``), a few per request (each up to 64 KB)."""
        for batch in batched(rows, GRAMS_BATCH):
            self._c.call(lambda c, b=batch: c.insert(self._c.grams, list(b)), retry=False)  # type: ignore[misc]

    def cjk_paths(self) -> set[str]:
        """The paths of every chunk whose keywords hold a CJK pair (``cjk_words.gram_token``:
        ``cjk`` then a code point's six hex digits, which begin with 0): one scan of the
        collection (86 s at 70,792 Chinese chunks on milvus-lite; a scan per 200 paths
        took longer in all)."""
        where = 'keywords like "%cjk0%"'
        rows = self._c.call(lambda c: scan(c, self._c.chunks, where, ["path"]))
        return {str(r["path"]) for r in rows}

    def grams_rows(self, paths: Iterable[str]) -> Iterator[GramsRow]:
        """The grams rows of ``paths`` (path, version, pair words), each file's together,
        read ``GRAMS_BATCH`` rows a request: a long file's rows are never all held at once.
        (Plain queries: milvus-lite's query iterator took three times as long.)"""
        for batch in batched(sorted(set(paths)), GRAMS_BATCH):
            where = in_filter("path", batch)
            ids = self._c.call(lambda c, w=where: ids_by(c, self._c.grams, w, "path"))  # type: ignore[misc]
            for part in batched(ids, GRAMS_BATCH):
                by_id = in_filter("id", part)
                rows = self._c.call(
                    lambda c, w=by_id: c.query(  # type: ignore[misc]
                        self._c.grams, filter=w, output_fields=["path", "version", "pairs"]
                    )
                )
                for r in sorted(rows, key=lambda r: (str(r["path"]), r["id"])):
                    yield str(r["path"]), int(r["version"]), str(r["pairs"]).split()

    def count_grams(self) -> int:
        """Rows in the grams collection (a file's one or more)."""
        return self._c.call(lambda c: count_rows(c, self._c.grams, ""))

    def grams_paths(self) -> set[str]:
        """The paths of every grams row: one scan of the collection."""
        rows = self._c.call(lambda c: scan(c, self._c.grams, 'path != ""', ["path"]))
        return {str(r["path"]) for r in rows}

    def sample_heads(self, start: int, end: int) -> dict[str, int]:
        """The files whose first chunk is in buckets ``start`` to ``end`` (of ``BUCKETS``),
        each with its newest version: a sample of whole files, spread over the folder as
        ``sample_keywords``'s chunks are."""
        where = f"chunk_index == 0 and bucket >= {int(start)} and bucket < {int(end)}"
        heads: dict[str, int] = {}
        for r in self._c.call(lambda c: scan(c, self._c.chunks, where, ["path", "version"])):
            path, version = str(r["path"]), int(r["version"])
            heads[path] = max(version, heads.get(path, version))
        return heads
