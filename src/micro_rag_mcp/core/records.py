"""The records every store keeps: a file's, a chunk to store, a chunk as stored."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What the catalog knows of one file, as of its last reindex."""

    path: str
    ext: str
    size: int
    mtime_ns: int
    checksum: str | None
    status: str
    error: str | None


@dataclass(frozen=True, slots=True)
class NewChunk:
    """A chunk about to be stored, with its citation positions."""

    chunk_index: int
    char_start: int
    char_end: int
    line_start: int | None
    line_end: int | None
    page: int | None
    title: str
    text: str
    section: str | None = None  # heading path above the passage
    locator: str | None = None  # position in the file's own terms ("slide 4")


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A stored chunk joined with its file, as search returns it."""

    id: int
    path: str
    ext: str
    mtime_ns: int
    chunk_index: int
    char_start: int
    char_end: int
    line_start: int | None
    line_end: int | None
    page: int | None
    text: str
    size: int  # the file's size when indexed; -1 when its stamp was too recent to trust
    section: str | None = None
    locator: str | None = None
