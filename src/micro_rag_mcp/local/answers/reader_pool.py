"""Catalog connections kept between searches.

A search on a new connection starts with an empty page cache: every B-tree page it
touches is read with a system call, and at a million chunks the keyword channel's BM25
looks up the size of every matching row. A connection kept from one search to the next
took 13.6 ms of CPU where a new one took 14.5 ms (docs/benchmarks.md).

Reading through a memory map (SQLite's ``mmap_size``) saved 3 ms more at a million
chunks, but every page a process reads through a map counts in its RSS: an idle server
on 100k chunks grew from about 400 to 540 MB, over the 500 MB it is allowed. So nothing
is mapped; the pages stay in the kernel's page cache, which RSS does not count.

A kept connection is used again only while the catalog file is the one it opened (same
device, inode and change time): a catalog moved aside and created anew, or one that
changed on disk, gets a new connection. A connection that failed, or one opened
immutable (a folder this process cannot write, where it would never see a change), is
never kept.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt

KEEP = 4  # idle connections kept at most (one per search running at once)

_Identity = tuple[int, int, int]


class ReaderPool:
    def __init__(self, path: Path, keep: int = KEEP) -> None:
        self.path = path
        self.keep = keep
        self._lock = threading.Lock()
        self._idle: list[tuple[_Identity, Catalog]] = []
        self._closed = False

    @contextlib.contextmanager
    def reader(self) -> Iterator[Catalog]:
        """A reader of the catalog as it is now; ``CatalogCorrupt`` as ``open_reader``."""
        identity, catalog = self._take()
        try:
            yield catalog
        except BaseException:
            catalog.close()  # its state after a failure is not worth keeping
            raise
        self._give_back(identity, catalog)

    def close(self) -> None:
        """Close the idle connections; those in use are closed when they come back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for _, catalog in idle:
            catalog.close()

    def _take(self) -> tuple[_Identity | None, Catalog]:
        identity = _identity(self.path)  # before opening: a file replaced meanwhile is new
        stale: list[Catalog] = []
        found: Catalog | None = None
        with self._lock:
            while self._idle and found is None:
                kept_identity, catalog = self._idle.pop()
                if kept_identity == identity:
                    found = catalog
                else:
                    stale.append(catalog)
        for catalog in stale:
            catalog.close()
        if found is not None:
            return identity, found
        catalog = Catalog.open_reader(self.path)
        if catalog.immutable:
            return None, catalog
        return identity, catalog

    def _give_back(self, identity: _Identity | None, catalog: Catalog) -> None:
        with self._lock:
            if identity is not None and not self._closed and len(self._idle) < self.keep:
                self._idle.append((identity, catalog))
                return
        catalog.close()


def _identity(path: Path) -> _Identity:
    try:
        st = os.stat(path)
    except FileNotFoundError as e:
        raise CatalogCorrupt("catalog does not exist yet") from e
    return st.st_dev, st.st_ino, st.st_ctime_ns
