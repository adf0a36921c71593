"""The records every store keeps: a file's, a chunk to store, a chunk as stored, and the
entries a scan of the folder passed over."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast, get_args

FileStatus = Literal["ok", "failed", "writing"]  # indexed; cannot be read; being written (Milvus)
SkipReason = Literal[
    "symlink outside the folder", "broken symlink", "not a regular file", "name not valid UTF-8"
]
REASONS: tuple[SkipReason, ...] = get_args(SkipReason)


def file_status(value: str) -> FileStatus:
    """A status as stored, checked to be one (a store written by something else)."""
    if value in get_args(FileStatus):
        return cast(FileStatus, value)
    raise ValueError(f"not a file status: {value!r}")


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What the catalog knows of one file, as of its last reindex."""

    path: str
    ext: str
    size: int
    mtime_ns: int
    checksum: str | None
    status: FileStatus
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


@dataclass(frozen=True, slots=True)
class Skip:
    rel: str  # relative to the data folder; an undecodable byte shown as "\xff"
    reason: SkipReason


@dataclass(frozen=True, slots=True)
class SkipGroup:
    """The entries skipped for one reason: how many, and the first few paths."""

    reason: SkipReason
    count: int
    examples: tuple[str, ...]
