"""Bringing the index in line with the folder: read what changed, and what a vector is.

``sync_files`` walks the folder and, file by file, replaces the catalog's chunks in one
transaction; keyword search sees each file as soon as it commits. ``reconcile`` names the
chunks whose text has no vector, which ``pipeline`` embeds from their stored text while
files are still being read; ``drop_orphans`` drops, when a pass ends, the vectors whose
text no chunk holds any more. All are restartable at any instant.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from micro_rag_mcp.catalog import Catalog, FileRecord, NewChunk
from micro_rag_mcp.chunking import Locator, chunk_text
from micro_rag_mcp.embedder import Embedder
from micro_rag_mcp.errors import MicroRagError, ReadError
from micro_rag_mcp.isolation import IsolatedReader
from micro_rag_mcp.readers import Document
from micro_rag_mcp.results import Progress, ProgressFn, ReindexReport
from micro_rag_mcp.scanner import PathSet, ScannedFile, ScanResult, ScanRules, Scope, scan
from micro_rag_mcp.settings import Settings
from micro_rag_mcp.skipped import record as record_skipped
from micro_rag_mcp.vector_text import VECTOR_RECIPE
from micro_rag_mcp.vectors import VectorStore

logger = logging.getLogger(__name__)

EMBED_BATCH = 32  # chunks embedded per step: a stop waits for one step (about a second idle)
QUIET_STEP = 1024  # files skipped unchanged between two progress reports
FOLLOW_S = 0.2  # how often a pass whose own files are read looks for changes noted for it
RACY_WINDOW_NS = 2_000_000_000  # a stamp younger than this is re-checked next time


@dataclass(slots=True)
class SyncCounts:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    urgent: list[str] = field(default_factory=list)  # files stored for a watcher: embed first

    def report(
        self,
        failed: list[tuple[str, str]],
        chunks_total: int,
        chunks_embedded: int,
        started: float,
    ) -> ReindexReport:
        """What a pass that began at ``started`` (``time.monotonic``) did, as the tools
        return it; ``failed`` is every failed file in scope, not only this pass's."""
        return ReindexReport(
            files_added=self.added,
            files_updated=self.updated,
            files_removed=self.removed,
            files_unchanged=self.unchanged,
            files_failed=failed,
            chunks_total=chunks_total,
            chunks_embedded=chunks_embedded,
            elapsed_ms=int((time.monotonic() - started) * 1000),
        )

    def left_as_it_was(self, *, ok: bool) -> None:
        """A file whose stamp or text says it has not changed: counted unchanged if it is
        indexed; one that failed stays among the failures the report lists, once."""
        if ok:
            self.unchanged += 1

    def take_urgent(self) -> list[str]:
        """The files stored for a watcher so far, leaving the list to gather more.

        Safe while another thread appends: only what was there is taken away.
        """
        n = len(self.urgent)
        taken = self.urgent[:n]
        del self.urgent[:n]
        return taken


def scan_rules(settings: Settings) -> ScanRules:
    return ScanRules(
        root=settings.data_folder,
        exts=settings.exts,
        exclude=(settings.index_folder,),
        skip_dirs=settings.skip_dirs,
        ignore=settings.exclude,
    )


@dataclass(frozen=True, slots=True)
class Follow:
    """How a pass takes the changes a watcher notes while it runs (``Catalog.add_pending``):
    a thread of the pass looks for them every ``FOLLOW_S`` (``_NotedChanges``) until
    ``halt`` is set; ``listed`` is set once the pass's own files are read. Their chunks
    are embedded first (``SyncCounts.urgent``), so a change never waits for a long pass."""

    listed: threading.Event = field(default_factory=threading.Event)
    halt: threading.Event = field(default_factory=threading.Event)


def sync_files(
    catalog: Catalog,
    settings: Settings,
    *,
    scope: Scope | None = None,
    force: bool = False,
    progress: ProgressFn | None = None,
    counts: SyncCounts | None = None,
    follow: Follow | None = None,
) -> SyncCounts:
    """Make the catalog match the files in scope, file by file.

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
    found = listing.files
    gone, moved = _move(catalog, counts, known, gone_paths(known, listing, scope), found)
    total = len(found) + len(gone)
    for done, rel in enumerate(gone, 1):
        _forget(catalog, counts, rel)
        counts.removed += 1
        if progress:
            progress(Progress("reading", done, total, rel))
    with IsolatedReader(settings.data_folder, settings.read_timeout_s) as reader:

        def read(path: Path) -> Document:
            return reader.read(path, max_bytes=settings.max_file_bytes)

        noted = _NotedChanges(catalog, settings, known, failed, counts, follow)
        if follow is not None:
            noted.start()
        try:
            for done, f in enumerate(found, len(gone) + 1):
                if f.rel in moved or f.rel in noted.handled:
                    continue  # moved, or a watcher's change done already
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
                    paths = catalog.take_pending()
                    if paths:
                        if reader is None:  # started at the first change: most passes see none
                            s = self._settings
                            reader = held.enter_context(
                                IsolatedReader(s.data_folder, s.read_timeout_s)
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
    catalog.move_files([(old, new) for new, old in moves.items()])
    for new, old in moves.items():
        known[new] = known.pop(old)
        logger.debug("moved %s to %s", old, new)
    counts.added += len(moves)
    counts.removed += len(moves)
    taken = set(moves.values())
    return [rel for rel in gone if rel not in taken], set(moves)


def _forget(catalog: Catalog, counts: SyncCounts, rel: str) -> None:
    old = catalog.remove_file(rel)
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
    if stamp is not None and not force and stamp == (f.size, f.mtime_ns):
        counts.left_as_it_was(ok=f.rel not in failed_before)
        return False
    rec = catalog.file_record(f.rel) if stamp is not None else None
    ext = os.path.splitext(f.rel)[1].lower()
    size = _stamp_size(f)
    try:
        text, chunks = _extract(read(f.path), f.path, settings)
    except ReadError as e:
        if not f.path.exists():  # deleted between the scan and the read
            if rec is not None:
                _forget(catalog, counts, f.rel)
                counts.removed += 1
            return True
        failed = failure_record(f, ext, size, e)
        catalog.store_file(failed, [])
        counts.failed.append((f.rel, failed.error or ""))
        return True
    checksum = text_checksum(text)
    if rec is not None and not force and rec.status == "ok" and rec.checksum == checksum:
        catalog.touch_file(f.rel, size, f.mtime_ns)
        counts.left_as_it_was(ok=True)
        return True
    record = FileRecord(f.rel, ext, size, f.mtime_ns, checksum, "ok", None)
    catalog.store_file(record, chunks)
    if rec is None:
        counts.added += 1
    else:
        counts.updated += 1
    logger.debug("indexed %s (%d chunks)", f.rel, len(chunks))
    return True


def gone_paths(known: Iterable[str], listing: ScanResult, scope: Scope | None) -> list[str]:
    """The recorded paths in scope that the folder no longer holds (a folder that could
    not be listed may still hold its files: they are kept)."""
    on_disk = {f.rel for f in listing.files}
    return [
        p
        for p in known
        if p not in on_disk and (scope is None or scope.matches(p)) and not listing.may_hold(p)
    ]


def failure_record(f: ScannedFile, ext: str, size: int, e: ReadError) -> FileRecord:
    """What is recorded of a file that could not be read, logged once."""
    reason = str(e) or type(e).__name__
    logger.warning("cannot index %s: %s", f.rel, reason)
    # A transient failure keeps no stamp, so the next reindex tries the file again.
    stamp_size = -1 if e.transient else size
    return FileRecord(f.rel, ext, stamp_size, f.mtime_ns, None, "failed", reason)


def text_checksum(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _stamp_size(f: ScannedFile) -> int:
    """The size to record, or -1 when the file changed too recently to trust its stamp.

    Two writes within one tick of the file-system clock can leave the same size and
    mtime; a stamp taken that close to a write is recorded as unknown, so the next
    reindex compares the text's checksum instead of trusting it (git's "racy" rule).
    """
    return -1 if time.time_ns() - f.mtime_ns < RACY_WINDOW_NS else f.size


def _extract(doc: Document, path: Path, settings: Settings) -> tuple[str, list[NewChunk]]:
    """Chunk and locate one document; raise ReadError if it has no text.

    A PDF is chunked page by page, so every passage cites exactly one page; likewise no
    passage spans one of the document's breaks (a sheet, a slide). Table rows are kept
    whole: a document with rows is chunked at row ends without overlap. Lines are given
    for documents without pages, locators or rows (lines of the extracted text).
    """
    if not doc.text.strip():
        raise ReadError("no extractable text (empty document)")
    title = document_title(path, doc.title)
    locate = Locator(
        doc.text, doc.page_starts, sections=doc.sections, locators=doc.locators, rows=doc.rows
    )
    bounds = sorted({0, *doc.page_starts, *doc.breaks})
    segments = zip(bounds, [*bounds[1:], len(doc.text)], strict=True)
    overlap = 0 if doc.rows else settings.chunk_overlap
    with_lines = not (doc.page_starts or doc.locators or doc.rows)
    chunks: list[NewChunk] = []
    for seg_start, seg_end in segments:
        for c in chunk_text(doc.text[seg_start:seg_end], settings.chunk_size, overlap):
            start, end = seg_start + c.start, seg_start + c.end
            first, last = locate.lines(start, end) if with_lines else (None, None)
            chunks.append(
                NewChunk(
                    len(chunks),
                    start,
                    end,
                    first,
                    last,
                    locate.page(start),
                    title,
                    c.text,
                    section=locate.section(start),
                    locator=locate.where(start, end),
                )
            )
    return doc.text, chunks


def document_title(path: Path, metadata_title: str = "") -> str:
    """What a file is, in words: its name, and the title its metadata gives, if any.

    ``q3_sales-report.pdf`` -> ``q3 sales report``. A name without a letter (``4471.txt``)
    says nothing and is left out. The title is stored with every chunk of the file: it is
    the keyword channel's title column and it heads the text each chunk is embedded with.
    """
    name = " ".join(path.stem.replace("_", " ").replace("-", " ").split())
    if not any(ch.isalpha() for ch in name):
        name = ""
    metadata_title = " ".join(metadata_title.split())
    if metadata_title and metadata_title.casefold() != name.casefold():
        return f"{name} — {metadata_title}" if name else metadata_title
    return name


def vector_space(embedder: Embedder) -> str:
    """The identity of the vectors: the model and what it was given to embed."""
    return f"{embedder.model_id};{VECTOR_RECIPE}"


def reconcile(catalog: Catalog, vectors: VectorStore) -> tuple[list[int], int]:
    """The chunks that lack a vector (one chunk id per missing key), and the highest chunk
    id seen (chunks stored later have higher ids). Drops nothing: see ``drop_orphans``."""
    import numpy as np

    chunk_ids, keys = catalog.id_keys()
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

    _, keys = catalog.id_keys()
    orphans = np.setdiff1d(vectors.ids(), keys)
    if orphans.size:
        vectors.remove(orphans.tolist())
        logger.info("dropped %d vectors whose chunks are gone", orphans.size)
    return int(orphans.size)
