"""The index in Milvus: the files' and chunks' rows and every query on them; the
collections themselves are ``collections.py``'s, the grams rows ``pairs.py``'s.

``NAME_files`` also holds each path's ``shard_key`` (``shards.shard_key``), so a worker
of share I/N asks for its own file rows with one range filter rather than reading every
row of the folder.

``NAME_chunks`` holds each chunk's text, citation fields, dense vector and a BM25 sparse
vector that Milvus computes (a BM25 function, no model) from ``keywords``: the title and
text stemmed as the embedded store's FTS5 index stems them (``text`` stays as written,
for ``read`` and citations). Every chunk carries the ``version`` of its file it belongs
to. ``NAME_files`` holds one row per file (stamp, checksum, status, error) and its
*current* version.

Milvus has no transaction across entities, so a file changes in three steps: its new
chunks are inserted under a new version, its file row is flipped to that version (one
upsert of one entity), then the old version's chunks are deleted. Readers keep only
chunks whose version is their file's current one, so a process killed at any instant
leaves the old state or the new one visible, never both and never half.

``NAME_grams`` holds the CJK pairs of each file's whole text (a long file in several
rows), under the file's version as its chunks are, for long CJK queries
(``search.documents``).

The run identity (vector space, chunking and keyword stemming) is a property of the
chunks collection; ``check_identity`` refuses to mix another.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from micro_rag_mcp.core.address import StoreConfig
from micro_rag_mcp.milvus.collections import MilvusCollections
from micro_rag_mcp.milvus.pairs import FilePairs
from micro_rag_mcp.milvus.requests import (
    INSERT_BATCH,
    batched,
    count_rows,
    scan,
    sized,
)
from micro_rag_mcp.milvus.rows import (
    BUCKETS,
    CHUNK_FIELDS,
    FILE_FIELDS,
    WRITING,
    ChunkHit,
    FileRow,
    clip,
    file_row,
    hit,
    in_filter,
    literal,
)
from micro_rag_mcp.milvus.shards import shard_key, shard_range
from micro_rag_mcp.text.stemming import STEMMING_ID

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

# Recorded in the identity: what the keywords field holds (stemmed words, CJK bigram words).
KEYWORDS_ID = f"{STEMMING_ID};cjk-bigram-words-1;sample-buckets-1"
# Recorded in the identity: how file rows are laid out (a worker needs their shard keys)
# and that each file with CJK text has its grams rows.
FILES_LAYOUT = "shard-key-range-1;grams-1"
# Older layouts this release takes and records anew: a store made before the grams
# collection (its next pass writes the rows). Once recorded, an older release is refused,
# as it would write files without their grams rows.
OLDER_FILES_LAYOUTS = frozenset({"shard-key-range-1"})


class MilvusIndex:
    """One connection to the collections of one index: its files' and chunks' rows and
    the searches over them; the client and the collections themselves are
    ``collections``, the CJK pairs of whole files ``pairs``."""

    def __init__(self, config: StoreConfig) -> None:
        self.collections = MilvusCollections(config)
        self.pairs = FilePairs(self.collections)
        self._c = self.collections

    def files(
        self, status: str | None = None, shard: tuple[int, int] | None = None
    ) -> dict[str, FileRow]:
        """Every file row (or those of one status, of one share), by path; the store
        selects them."""
        conditions = [f"status == {literal(status)}"] if status else []
        if shard is not None:
            low, high = shard_range(shard)
            conditions.append(f"shard_key >= {low} and shard_key < {high}")
        where = " and ".join(conditions) or 'path != ""'

        rows = self._c.call(lambda c: scan(c, self._c.files_name, where, FILE_FIELDS))
        return {r["path"]: file_row(r) for r in rows}

    def file_rows(self, paths: Iterable[str]) -> dict[str, FileRow]:
        wanted = sorted(set(paths))
        rows: dict[str, FileRow] = {}
        for batch in batched(wanted):
            found = self._c.call(
                lambda c, b=batch: c.query(  # type: ignore[misc]
                    self._c.files_name, filter=in_filter("path", b), output_fields=FILE_FIELDS
                )
            )
            rows.update((r["path"], file_row(r)) for r in found)
        return rows

    def put_file(self, row: FileRow) -> None:
        self.put_files([row])

    def put_files(self, files: Sequence[FileRow]) -> None:
        """Flip files to their versions (or record them): one upsert, one entity each.

        A row's ``previous`` names the version whose chunks are still to be deleted (0:
        none), so a pass killed before it deletes them leaves the next pass a note.
        """
        now = time.time()
        rows = [
            {
                "path": f.record.path,
                "ext": clip(f.record.ext, 256),
                "size": f.record.size,
                "mtime_ns": f.record.mtime_ns,
                "checksum": f.record.checksum or "",
                "status": f.record.status,
                "error": clip(f.record.error or ""),
                "version": f.version,
                "previous": f.previous,
                "head_id": f.head_id,
                "shard_key": shard_key(f.record.path),
                "indexed_at": now,
                "unused": [0.0, 0.0],
            }
            for f in files
        ]
        for batch in batched(rows, INSERT_BATCH):
            self._c.call(lambda c, b=batch: c.upsert(self._c.files_name, list(b)))  # type: ignore[misc]

    def seal(self) -> None:
        """Seal what was written into indexed segments (Milvus's ``flush``).

        Until then rows sit in growing segments, which milvus-lite searches by brute force
        (a search over 6,000 fresh chunks took 2.2 s, 0.2 s once sealed). A cluster seals
        on its own by size and time, so this is asked once per pass, not per write.
        """

        def seal(c: Any) -> None:
            for name in (self._c.chunks, self._c.files_name, self._c.grams):
                if name != self._c.grams or c.has_collection(name):
                    c.flush(name)

        self._c.call(seal)

    def drop_files(self, paths: Sequence[str]) -> None:
        """Remove files' rows, one request per ``QUERY_BATCH`` of them."""
        for batch in batched(paths):
            where = in_filter("path", batch)
            self._c.call(lambda c, w=where: c.delete(self._c.files_name, filter=w))  # type: ignore[misc]

    def count_files(self) -> tuple[int, int]:
        """Files indexed and failed.

        The total comes from row counts, and only the rows that are not indexed are
        counted by filter: milvus-lite answers a filtered count by building every row
        that matches, which for ``status == "ok"`` over 200,000 files was most of a
        search's time at 1M chunks."""
        total = self._count(self._c.files_name, "")
        failed = self._count(self._c.files_name, f"status == {literal('failed')}")
        writing = self._count(self._c.files_name, f"status == {literal(WRITING)}")
        return total - failed - writing, failed

    def count_chunks(self) -> int:
        return self._count(self._c.chunks, "")  # no filter: Milvus answers from its row counts

    def _count(self, collection: str, where: str) -> int:
        return self._c.call(lambda c: count_rows(c, collection, where))

    def insert_chunks(self, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Store chunk rows (``chunk_rows``), up to ``INSERT_BATCH`` per request; their new ids."""
        ids: list[int] = []
        for batch in sized(rows):
            done = self._c.call(lambda c, b=batch: c.insert(self._c.chunks, list(b)), retry=False)  # type: ignore[misc]
            ids.extend(int(i) for i in done["ids"])
        return ids

    def delete_strays(self, paths: Sequence[tuple[str, int]]) -> None:
        """Delete each path's chunks and grams rows but those of the given version (0: all
        of them): what a replaced version or a killed write left.

        One request per ``QUERY_BATCH`` files: a delete by filter makes milvus-lite read
        every row of the collection, whatever the filter."""
        for batch in batched(paths):
            new = [p for p, v in batch if v == 0]
            kept = [(p, v) for p, v in batch if v != 0]
            parts = [in_filter("path", new)] if new else []
            parts += [f"(path == {literal(p)} and version != {int(v)})" for p, v in kept]
            self._delete(" or ".join(parts))

    def delete_chunks(self, path: str) -> None:
        """Delete every chunk (and grams row) of one file."""
        self._delete(f"path == {literal(path)}")

    def _delete(self, where: str) -> None:
        """Delete the chunks and grams rows that match ``where`` (a grams collection a
        store of another release lacks is left alone)."""

        def delete(c: Any) -> None:
            c.delete(self._c.chunks, filter=where)
            if self._c.holds_grams(c):
                c.delete(self._c.grams, filter=where)

        self._c.call(delete)

    def versions_of(self, path: str, *, grams: bool = False) -> set[int]:
        """The versions of ``path`` that have rows in the chunks (or the grams) collection."""
        name = self._c.grams if grams else self._c.chunks
        if grams and not self._c.call(lambda c: c.has_collection(name)):
            return set()
        rows = self._c.call(
            lambda c: c.query(name, filter=f"path == {literal(path)}", output_fields=["version"])
        )
        return {int(r["version"]) for r in rows}

    def dense(self, vector: npt.NDArray[np.float32], limit: int) -> list[ChunkHit]:
        found = self._c.call(
            lambda c: c.search(
                self._c.chunks,
                data=[[float(x) for x in vector]],
                anns_field="dense",
                limit=limit,
                output_fields=["path", "version"],
                search_params={"metric_type": "IP"},
            )
        )
        return [hit(h, h["distance"]) for h in found[0]]

    def keyword(self, words: Sequence[str], limit: int) -> list[tuple[ChunkHit, list[str]]]:
        """The best ``limit`` chunks for any of ``words`` (stemmed, as the stored keywords
        are) by Milvus's own BM25, each with its keyword words (``milvus_keywords``
        scores them). milvus-lite reports the score negated: taken as is."""
        found = self._bm25(self._c.chunks, words, limit, ["path", "version", "keywords"])
        return [(hit(h, abs(h["distance"])), h["entity"]["keywords"].split()) for h in found]

    def whole_files(self, words: Sequence[str], limit: int) -> list[tuple[str, int, float]]:
        """The best ``limit`` grams rows for ``words`` (``cjk_words.pair_word``, repeats
        counted) by Milvus's BM25 over each row: (path, version, score), best first."""
        found = self._bm25(self._c.grams, words, limit, ["path", "version"])
        return [
            (str(h["entity"]["path"]), int(h["entity"]["version"]), abs(float(h["distance"])))
            for h in found
        ]

    def _bm25(
        self, collection: str, words: Sequence[str], limit: int, fields: list[str]
    ) -> list[dict[str, Any]]:
        """The best ``limit`` rows of a collection for any of ``words``, by Milvus's BM25
        over its ``sparse`` field, best first."""
        if not words:
            return []
        found = self._c.call(
            lambda c: c.search(
                collection,
                data=[" ".join(words)],
                anns_field="sparse",
                limit=limit,
                output_fields=fields,
                search_params={"metric_type": "BM25"},
            )
        )
        return list(found[0])

    def sample_keywords(self, buckets: int, limit: int) -> list[str]:
        """The keyword text of the chunks in the first ``buckets`` of ``BUCKETS`` (at
        most ``limit`` of them): a sample of the whole collection, spread over every
        file whatever order the files were written in."""
        where = "" if buckets >= BUCKETS else f"bucket < {int(buckets)}"
        rows = self._c.call(
            lambda c: c.query(self._c.chunks, filter=where, output_fields=["keywords"], limit=limit)
        )
        return [str(r["keywords"]) for r in rows]

    def vectors(self, ids: Sequence[int]) -> dict[int, list[float]]:
        return {cid: list(v) for cid, v in self._field_of(ids, "dense").items()}

    def texts(self, ids: Sequence[int]) -> dict[int, str]:
        return {cid: str(t) for cid, t in self._field_of(ids, "text").items()}

    def _field_of(self, ids: Sequence[int], field: str) -> dict[int, Any]:
        out: dict[int, Any] = {}
        for batch in batched(list(ids)):
            rows = self._c.call(
                lambda c, b=batch: c.query(  # type: ignore[misc]
                    self._c.chunks, filter=in_filter("id", b), output_fields=["id", field]
                )
            )
            out.update((int(r["id"]), r[field]) for r in rows)
        return out

    def chunk_rows(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for batch in batched(list(ids)):
            rows.extend(
                self._c.call(
                    lambda c, b=batch: c.query(  # type: ignore[misc]
                        self._c.chunks, filter=in_filter("id", b), output_fields=CHUNK_FIELDS
                    )
                )
            )
        return rows

    def texts_of(self, paths: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """Each path's chunk rows (version, chunk_index, text and offsets), every version's,
        in no order: one scan per ``QUERY_BATCH`` paths, however many chunks they hold."""
        fields = ["path", "version", "chunk_index", "text", "char_start", "char_end"]

        out: dict[str, list[dict[str, Any]]] = {}
        for batch in batched(list(paths)):
            where = in_filter("path", batch)
            for r in self._c.call(lambda c, w=where: scan(c, self._c.chunks, w, fields)):  # type: ignore[misc]
                out.setdefault(str(r["path"]), []).append(r)
        return out

    def file_chunk_rows(self, path: str, version: int) -> list[dict[str, Any]]:
        """Every chunk of one file's version, in order."""
        where = f"path == {literal(path)} and version == {int(version)}"
        rows = self._c.call(
            lambda c: c.query(self._c.chunks, filter=where, output_fields=CHUNK_FIELDS)
        )
        return sorted(rows, key=lambda r: int(r["chunk_index"]))
