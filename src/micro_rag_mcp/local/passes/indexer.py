"""Bringing the index in line with the folder: read what changed, and what a vector is.

``sync_files`` walks the folder and, file by file, replaces the catalog's chunks in one
transaction; keyword search sees each file as soon as it commits. ``reconcile`` names the
chunks whose text has no vector, which ``pipeline`` embeds from their stored text while
files are still being read; ``drop_orphans`` drops, when a pass ends, the vectors whose
text no chunk holds any more. All are restartable at any instant.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from micro_rag_mcp.core.errors import MicroRagError
from micro_rag_mcp.core.results import Progress, ProgressFn
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.ingest.extra_readers import lacking, left_to_others, read_here
from micro_rag_mcp.ingest.files import (
    SyncCounts,
    decide,
    gone_paths,
    read_cost,
    scan_rules,
    unlisted_records,
)
from micro_rag_mcp.ingest.isolation import IsolatedReader
from micro_rag_mcp.ingest.readers import Document
from micro_rag_mcp.ingest.scanner import PathSet, ScannedFile, ScanResult, Scope, scan
from micro_rag_mcp.ingest.skipped import record as record_skipped
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.vectors.store import VectorStore

logger = logging.getLogger(__name__)

QUIET_STEP = 1024  # files skipped unchanged between two progress reports
FOLLOW_S = 0.2  # how often a pass whose own files are read looks for changes noted for it


@dataclass(frozen=True, slots=True)
class Follow:
    """How a pass takes the changes a watcher notes while it runs (``Catalog.add_pending``):
    a thread of the pass looks for them every ``FOLLOW_S`` (``_NotedChanges``) until
    ``halt`` is set; ``listed`` is set once the pass's own files are read. Their chunks
    are embedded first (``SyncCounts.urgent``), so a change never waits for a long pass.
    ``stop`` (a pass stopped before its end) also kills a read under way; at a pass's
    normal end a noted file being read is read to its end."""

    listed: threading.Event = field(default_factory=threading.Event)
    halt: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)


def sync_files(
    catalog: Catalog,
    settings: Settings,
    *,
    scope: Scope | None = None,
    force: bool = False,
    progress: ProgressFn | None = None,
    counts: SyncCounts | None = None,
    follow: Follow | None = None,
    order: Callable[[ScannedFile], Any] = read_cost,
) -> SyncCounts:
    """Make the catalog match the files in scope, file by file, in the ``order`` of their
    cost to read (the cheap are searchable first; see ``read_cost``).

    Vectors are left alone: their keys are the text's (see ``drop_orphans``). ``progress``
    hears of every file read or removed, and of every ``QUIET_STEP``-th file skipped
    unchanged (a no-change pass stays cheap). With ``follow``, the changes noted for the
    pass are taken as it goes (see ``Follow``).
    """
    counts = counts if counts is not None else SyncCounts()
    known = catalog.stamps()
    failed = {p for p, _ in catalog.failures()}  # a failed file is not counted unchanged
    listing = scan(scan_rules(settings), scope)
    record_skipped(catalog, listing.skipped, scope)
    others = lacking(settings.readers)
    found = sorted((f for f in listing.files if read_here(f.rel, known, others)), key=order)
    gone = _folders_in_line(catalog, counts, listing, gone_paths(known, listing, scope))
    gone = left_to_others(settings.data_folder, gone, others)
    gone, moved = _move(catalog, counts, known, gone, found)
    total = len(found) + len(gone)
    for done, rel in enumerate(gone, 1):
        _forget(catalog, counts, rel)
        counts.removed += 1
        if progress:
            progress(Progress("reading", done, total, rel))
    halt = follow.stop if follow is not None else None
    with IsolatedReader(
        settings.data_folder, settings.read_timeout_s, halt=halt, readers=settings.readers
    ) as reader:

        def read(path: Path) -> Document:
            if progress:  # so that a file slow to read can be named while it is read
                progress(Progress("reading", done - 1, total, reading=f.rel))
            return reader.read(path, max_bytes=settings.max_file_bytes)

        noted = _NotedChanges(catalog, settings, known, failed, counts, follow)
        if follow is not None:
            noted.start()
        try:
            for done, f in enumerate(found, len(gone) + 1):
                if f.rel in moved or f.rel in noted.handled:
                    # moved, or a watcher's change done already; the last file still
                    # closes the count (the line would stop one short of the total)
                    if progress and done == total:
                        progress(Progress("reading", done, total, f.rel))
                    continue
                stamp = known.get(f.rel)
                was_read = _sync_one(catalog, settings, read, f, stamp, force, counts, failed)
                if progress and (was_read or done % QUIET_STEP == 0 or done == total):
                    progress(Progress("reading", done, total, f.rel))
                if noted.error is not None:
                    raise noted.error
            if follow is not None:
                follow.listed.set()
                follow.halt.wait()
        finally:
            if follow is not None:
                follow.halt.set()
                noted.join()
        noted.merge_into(counts)
    return counts


class _NotedChanges(threading.Thread):
    """The changes noted for a pass (``Follow``), taken every ``FOLLOW_S`` by a thread and
    a reader process of their own: a change never waits for the file the pass is reading
    (a long PDF can take a minute). Both write the catalog, each file in one transaction;
    a file both read is settled by the next look at it (its recorded stamp is the older)."""

    def __init__(
        self,
        catalog: Catalog,
        settings: Settings,
        known: dict[str, tuple[int, int]],
        failed: Collection[str],
        counts: SyncCounts,
        follow: Follow | None,
    ) -> None:
        super().__init__(name="micro-rag-noted", daemon=True)
        self._catalog = catalog
        self._settings = settings
        self._known = known
        self._failed = failed
        self._follow = follow
        self.counts = SyncCounts(urgent=counts.urgent)  # the pass's thread embeds these first
        self.handled: set[str] = set()
        self.error: BaseException | None = None

    def run(self) -> None:
        assert self._follow is not None
        try:
            with contextlib.ExitStack() as held:
                catalog = held.enter_context(contextlib.closing(self._catalog.another()))
                reader: IsolatedReader | None = None
                while True:
                    paths = catalog.writes.take_pending()
                    if paths:
                        if reader is None:  # started at the first change: most passes see none
                            s = self._settings
                            reader = held.enter_context(
                                IsolatedReader(
                                    s.data_folder,
                                    s.read_timeout_s,
                                    halt=self._follow.stop,
                                    readers=s.readers,
                                )
                            )
                        self.handled |= self._sync(catalog, reader, paths)
                    if self._follow.halt.wait(FOLLOW_S):
                        break
        except BaseException as e:  # handed to the reading thread, which raises it
            self.error = e

    def _sync(self, catalog: Catalog, reader: IsolatedReader, paths: list[str]) -> set[str]:
        limit = self._settings.max_file_bytes
        return _sync_noted(
            catalog,
            self._settings,
            lambda path: reader.read(path, max_bytes=limit),
            paths,
            self._known,
            self.counts,
            self._failed,
        )

    def merge_into(self, counts: SyncCounts) -> None:
        if self.error is not None:
            raise self.error
        counts.added += self.counts.added
        counts.updated += self.counts.updated
        counts.removed += self.counts.removed
        counts.unchanged += self.counts.unchanged
        counts.failed.extend(self.counts.failed)


def _sync_noted(
    catalog: Catalog,
    settings: Settings,
    read: Callable[[Path], Document],
    paths: list[str],
    known: dict[str, tuple[int, int]],
    counts: SyncCounts,
    failed: Collection[str],
) -> set[str]:
    """Bring the paths a watcher noted in line, ahead of the pass's own; the files done."""
    try:
        noted = PathSet(paths)
    except MicroRagError as e:  # a note no watcher of ours writes
        logger.warning("ignoring changes noted for the index: %s", e)
        return set()
    listing = scan(scan_rules(settings), noted)
    record_skipped(catalog, listing.skipped, noted)
    known.update(catalog.stamps_under(noted.paths))  # stored by this pass since it began
    gone = gone_paths(catalog.stamps_under(noted.paths), listing, noted)
    gone = _folders_in_line(catalog, counts, listing, gone)
    gone = left_to_others(settings.data_folder, gone, lacking(settings.readers))
    gone, moved = _move(catalog, counts, known, gone, listing.files)
    for rel in gone:
        _forget(catalog, counts, rel)
        counts.removed += 1
        known.pop(rel, None)
    for f in listing.files:
        if f.rel in moved:
            continue
        if _sync_one(catalog, settings, read, f, known.get(f.rel), False, counts, failed):
            counts.urgent.append(f.rel)
        rec = catalog.file_record(f.rel)
        if rec is None:
            known.pop(f.rel, None)
        else:
            known[f.rel] = (rec.size, rec.mtime_ns)
    logger.debug("took %d changed paths ahead of the pass", len(paths))
    return {f.rel for f in listing.files} | set(paths)


def _folders_in_line(
    catalog: Catalog, counts: SyncCounts, listing: ScanResult, gone: list[str]
) -> list[str]:
    """Record each folder the scan could not list as a failure (``unlisted_records``),
    and forget those that are listed again; the paths of the gone files left."""
    for record in unlisted_records(listing):
        counts.failed.append((record.path, record.error or ""))
        if catalog.file_record(record.path) != record:
            catalog.writes.store_file(record, [])
    for rel in gone:
        if rel.endswith("/"):
            catalog.writes.remove_file(rel)
    return [rel for rel in gone if not rel.endswith("/")]


def _move(
    catalog: Catalog,
    counts: SyncCounts,
    known: dict[str, tuple[int, int]],
    gone: list[str],
    found: list[ScannedFile],
) -> tuple[list[str], set[str]]:
    """Record files that were moved as moved, without reading them; the gone paths left,
    and the new paths of the files moved.

    A file new to the catalog whose name, size and mtime are those of exactly one file gone
    from it is that file, moved (a rename keeps both): its record takes the new path, and
    its chunks and their vectors stay as they are. A folder of a thousand files moved is
    one transaction, not a thousand reads. A stamp too recent to trust is never matched.
    """
    if not gone:
        return gone, set()
    by_stamp: dict[tuple[str, int, int], str | None] = {}
    for rel in gone:
        size, mtime_ns = known[rel]
        if size >= 0:
            stamp = (rel.rsplit("/", 1)[-1], size, mtime_ns)
            by_stamp[stamp] = None if stamp in by_stamp else rel  # None: not one file
    moves: dict[str, str] = {}
    for f in found:
        if f.rel in known:
            continue
        old = by_stamp.get((f.rel.rsplit("/", 1)[-1], f.size, f.mtime_ns))
        if old is not None and old not in moves.values():
            moves[f.rel] = old
    if not moves:
        return gone, set()
    catalog.writes.move_files([(old, new) for new, old in moves.items()])
    for new, old in moves.items():
        known[new] = known.pop(old)
        logger.debug("moved %s to %s", old, new)
    counts.added += len(moves)
    counts.removed += len(moves)
    taken = set(moves.values())
    return [rel for rel in gone if rel not in taken], set(moves)


def _forget(catalog: Catalog, counts: SyncCounts, rel: str) -> None:
    old = catalog.writes.remove_file(rel)
    logger.debug("removed %s (%d chunks)", rel, len(old))


def _sync_one(
    catalog: Catalog,
    settings: Settings,
    read: Callable[[Path], Document],
    f: ScannedFile,
    stamp: tuple[int, int] | None,
    force: bool,
    counts: SyncCounts,
    failed_before: Collection[str] = frozenset(),
) -> bool:
    """Bring one file in line; False if its stamp said it is unchanged (nothing was read).

    ``failed_before``: the files that had failed before the pass (unchanged, still failed)."""
    known = lambda: catalog.file_record(f.rel)  # noqa: E731
    ok_before = f.rel not in failed_before
    decision = decide(f, stamp, known, read, settings, force=force, ok_before=ok_before)
    decision.count(counts)
    record = decision.record
    if decision.outcome == "unchanged":
        return False
    if decision.outcome == "gone":
        if decision.known is not None:
            _forget(catalog, counts, f.rel)
    elif decision.outcome == "failed":
        assert record is not None
        catalog.writes.store_file(record, [])
    elif decision.outcome == "touched":
        assert record is not None
        catalog.writes.touch_file(f.rel, record.size, f.mtime_ns)
    else:
        assert record is not None
        catalog.writes.store_file(record, list(decision.chunks))
        logger.debug("indexed %s (%d chunks)", f.rel, len(decision.chunks))
    return True


def reconcile(catalog: Catalog, vectors: VectorStore) -> tuple[list[int], int]:
    """The chunks that lack a vector (one chunk id per missing key), and the highest chunk
    id seen (chunks stored later have higher ids). Drops nothing: see ``drop_orphans``."""
    import numpy as np

    chunk_ids, keys = catalog.chunks.id_keys()
    lacking = ~np.isin(keys, vectors.ids())
    _, first = np.unique(keys[lacking], return_index=True)
    missing = np.sort(chunk_ids[lacking][first])
    high = int(chunk_ids[-1]) if chunk_ids.size else 0
    return missing.tolist(), high


def drop_orphans(catalog: Catalog, vectors: VectorStore) -> int:
    """Drop the vectors no chunk carries any more; how many were dropped.

    Run when a pass ends, not while it runs: a file moved during a pass is removed before
    it is stored again at its new path, and its vectors must still be there then.
    """
    import numpy as np

    _, keys = catalog.chunks.id_keys()
    orphans = np.setdiff1d(vectors.ids(), keys)
    if orphans.size:
        vectors.remove(orphans.tolist())
        logger.info("dropped %d vectors whose chunks are gone", orphans.size)
    return int(orphans.size)
