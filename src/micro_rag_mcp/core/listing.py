"""The indexed files as a list a client pages through, and what tells that they changed.

``FileListing`` is what the MCP resources need of a store: a page of indexed files (in
path order, from a cursor), a cheap token that changes whenever the index does, and each
file's version, so a change can be named by path. ``local.listing.CatalogListing``
reads the embedded index's catalog through one read-only connection of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


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
