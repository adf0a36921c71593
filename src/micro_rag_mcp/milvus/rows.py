"""What the Milvus store's rows hold, and how the catalog's records become them and back.

Shared by the connection (``collections``), the writer (``sync``) and search
(``channels``): one place says which fields a chunk and a file row carry, how a
missing line or page is stored, and how text is clipped to Milvus's limits.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from micro_rag_mcp.core.records import FileRecord, FileStatus, NewChunk, StoredChunk, file_status
from micro_rag_mcp.milvus.cjk_words import gram_tokens, pair_word
from micro_rag_mcp.milvus.shards import shard_key
from micro_rag_mcp.text.cjk import bigrams, has_cjk, whole_text
from micro_rag_mcp.text.stemming import stemmed

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MAX_TEXT_BYTES = 65_535  # Milvus's VARCHAR limit
SMALL_BYTES = 2048
NONE = -1  # stands for a missing line or page number
BUCKETS = 1 << 16  # chunks fall in this many buckets (``bucket``)
WRITING: FileStatus = "writing"  # the status of a file new to the store until its first flip
CHUNK_FIELDS = [
    "id",
    "path",
    "version",
    "chunk_index",
    "char_start",
    "char_end",
    "line_start",
    "line_end",
    "page",
    "text",
    "section",
    "locator",
]
FILE_FIELDS = [
    "path",
    "ext",
    "size",
    "mtime_ns",
    "checksum",
    "status",
    "error",
    "version",
    "previous",
    "head_id",
    "indexed_at",
]


@dataclass(frozen=True, slots=True)
class FileRow:
    """A file as the files collection holds it: the catalog's record and its current version."""

    record: FileRecord
    version: int
    previous: int = 0  # a version whose chunks may exist beside ``version``'s: a write is under way
    head_id: int = -1  # the id of the file's first chunk at ``version`` (-1: none)
    indexed_at: float = 0.0


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """A chunk a channel found, with its score (cosine or BM25) and whose version it is."""

    id: int
    score: float
    path: str
    version: int


def literal(text: str) -> str:
    """A Milvus filter string literal for any text."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f'"{escaped}"'


def in_filter(field: str, values: Iterable[str | int]) -> str:
    items = ", ".join(literal(v) if isinstance(v, str) else str(int(v)) for v in values)
    return f"{field} in [{items}]"


def clip(text: str, limit: int = SMALL_BYTES) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, on a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def new_version() -> int:
    """A version number no earlier write of any file used (a path has one writer)."""
    return time.time_ns()


def chunk_rows(
    path: str,
    version: int,
    chunks: Sequence[NewChunk],
    vectors: npt.NDArray[np.float32],
) -> list[dict[str, Any]]:
    """One file's chunks as rows of the chunks collection; a chunk's keywords are its
    heading (``files.heading``) and its text."""
    return [
        {
            "path": path,
            "version": version,
            "chunk_index": c.chunk_index,
            "char_start": c.char_start,
            "char_end": c.char_end,
            "line_start": NONE if c.line_start is None else c.line_start,
            "line_end": NONE if c.line_end is None else c.line_end,
            "page": NONE if c.page is None else c.page,
            "text": c.text,
            "section": clip(c.section or ""),
            "locator": clip(c.locator or ""),
            "keywords": clip(keyword_text(f"{c.title}\n{c.text}"), MAX_TEXT_BYTES),
            "bucket": bucket(path, c.chunk_index),
            "dense": [float(x) for x in v],
        }
        for c, v in zip(chunks, vectors, strict=True)
    ]


def gram_rows(
    path: str, version: int, title: str, chunks: Sequence[tuple[str, int, int]]
) -> list[dict[str, Any]]:
    """The grams collection's rows of one file from its chunks in order (text,
    char_start, char_end): the pairs of its whole text (``cjk.whole_text``) as
    ``pair_word`` words, in as few rows as Milvus's text limit allows (about 6,500 pairs
    a row); none for a file without CJK text."""
    text = whole_text([(0, title, t, start, end) for t, start, end in chunks])
    if not has_cjk(text):
        return []
    rows: list[dict[str, Any]] = []
    part: list[str] = []
    size = 0
    for gram in bigrams(text).split():
        word = pair_word(gram)
        if size + len(word) + 1 > MAX_TEXT_BYTES:
            rows.append({"path": path, "version": version, "pairs": " ".join(part)})
            part, size = [], 0
        part.append(word)
        size += len(word) + 1
    rows.append({"path": path, "version": version, "pairs": " ".join(part)})
    return rows


def bucket(path: str, chunk_index: int) -> int:
    """A chunk's bucket in ``[0, BUCKETS)``, the stable hash that shards paths taken of
    where it is: the chunks of the first k buckets are a fair sample of k / ``BUCKETS``
    of the collection."""
    return shard_key(f"{path}\0{chunk_index}") % BUCKETS


def keyword_text(text: str) -> str:
    """What the BM25 function reads: the stemmed words, then the CJK bigram words."""
    return " ".join([stemmed(text), *gram_tokens(text)]).strip()


def hit(h: dict[str, Any], score: float) -> ChunkHit:
    entity = h.get("entity", {})
    return ChunkHit(int(h["id"]), float(score), str(entity["path"]), int(entity["version"]))


def file_row(r: dict[str, Any]) -> FileRow:
    record = FileRecord(
        str(r["path"]),
        str(r["ext"]),
        int(r["size"]),
        int(r["mtime_ns"]),
        str(r["checksum"]) or None,
        file_status(str(r["status"])),
        str(r["error"]) or None,
    )
    return FileRow(
        record, int(r["version"]), int(r["previous"]), int(r["head_id"]), float(r["indexed_at"])
    )


def stored_chunk(row: dict[str, Any], file: FileRecord) -> StoredChunk:
    """A chunk row joined with its file, as search and read return it."""

    def maybe(value: Any) -> int | None:
        return None if int(value) == NONE else int(value)

    return StoredChunk(
        id=int(row["id"]),
        path=file.path,
        ext=file.ext,
        mtime_ns=file.mtime_ns,
        chunk_index=int(row["chunk_index"]),
        char_start=int(row["char_start"]),
        char_end=int(row["char_end"]),
        line_start=maybe(row["line_start"]),
        line_end=maybe(row["line_end"]),
        page=maybe(row["page"]),
        text=str(row["text"]),
        size=file.size,
        section=str(row["section"]) or None,
        locator=str(row["locator"]) or None,
    )
