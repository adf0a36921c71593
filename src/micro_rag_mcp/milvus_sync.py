"""A reindex pass into a Milvus store: the embedded pass's reading, one file at a time.

The folder is scanned and each file read and chunked exactly as ``indexer`` does it
(``scan``, ``_extract``, ``embedding_text``); unchanged files are skipped by their size
and mtime, then by their text's checksum. A changed file's chunks are embedded before
they are written, since a chunk in Milvus always has its vector; the write is the
three-step version flip of ``milvus_store``.

With a shard (``I/N``), the pass owns only the paths whose hash falls in its share, both
to index and to delete, so N workers cover one folder with no lock between them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from micro_rag_mcp.catalog import FileRecord, NewChunk
from micro_rag_mcp.embedder import Embedder
from micro_rag_mcp.errors import ReadError
from micro_rag_mcp.indexer import (
    EMBED_BATCH,
    SyncCounts,
    _extract,
    _stamp_size,
    embedding_text,
    failure_record,
    gone_paths,
    scan_rules,
    text_checksum,
)
from micro_rag_mcp.isolation import IsolatedReader
from micro_rag_mcp.milvus_store import FileRow, MilvusIndex, new_version
from micro_rag_mcp.readers import Document
from micro_rag_mcp.results import Progress, ProgressFn
from micro_rag_mcp.scanner import ScannedFile, Scope, scan
from micro_rag_mcp.settings import Settings
from micro_rag_mcp.store import in_shard

logger = logging.getLogger(__name__)


def sync_store(
    index: MilvusIndex,
    embedder: Embedder,
    settings: Settings,
    *,
    shard: tuple[int, int] | None = None,
    scope: Scope | None = None,
    force: bool = False,
    progress: ProgressFn | None = None,
) -> tuple[SyncCounts, int]:
    """Make the store match this shard's files in scope; returns what changed and how
    many chunks were embedded."""
    counts = SyncCounts()
    embedded = 0
    known = {p: r for p, r in index.files().items() if in_shard(p, shard)}
    listing = scan(scan_rules(settings), scope)
    found = [f for f in listing.files if in_shard(f.rel, shard)]
    gone = gone_paths(known, listing, scope)
    total = len(found) + len(gone)
    for done, rel in enumerate(gone, 1):
        forget(index, rel)
        counts.removed += 1
        if progress:
            progress(Progress("reading", done, total, rel))
    with IsolatedReader(settings.data_folder, settings.read_timeout_s) as reader:

        def read(path: Path) -> Document:
            return reader.read(path, max_bytes=settings.max_file_bytes)

        for done, f in enumerate(found, len(gone) + 1):
            step = _FileStep(index, embedder, settings, progress, done, total)
            step.run(read, f, known.get(f.rel), force, counts)
            embedded += step.embedded
            if progress:
                progress(Progress("reading", done, total, f.rel))
    return counts, embedded


def forget(index: MilvusIndex, rel: str) -> None:
    """A file is gone: its row first (readers stop seeing it), then its chunks."""
    index.drop_file(rel)
    index.delete_chunks(rel)
    logger.debug("removed %s", rel)


class _FileStep:
    """One file brought in line with the store."""

    def __init__(
        self,
        index: MilvusIndex,
        embedder: Embedder,
        settings: Settings,
        progress: ProgressFn | None,
        done: int,
        total: int,
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.settings = settings
        self.progress = progress
        self.done, self.total = done, total
        self.embedded = 0

    def run(
        self,
        read: Callable[[Path], Document],
        f: ScannedFile,
        row: FileRow | None,
        force: bool,
        counts: SyncCounts,
    ) -> None:
        if row is not None and row.previous:
            self.finish(row)
        rec = row.record if row is not None else None
        if rec is not None and not force and (rec.size, rec.mtime_ns) == (f.size, f.mtime_ns):
            counts.unchanged += 1
            return
        ext = os.path.splitext(f.rel)[1].lower()
        size = _stamp_size(f)
        try:
            doc = read(f.path)
            text, chunks = _extract(doc, f.path, self.settings)
        except ReadError as e:
            self._failed(f, row, ext, size, e, counts)
            return
        checksum = text_checksum(text)
        if rec is not None and not force and rec.status == "ok" and rec.checksum == checksum:
            assert row is not None
            touched = FileRecord(f.rel, ext, size, f.mtime_ns, checksum, "ok", None)
            self.index.put_file(touched, row.version)  # same version: only the stamp changes
            counts.unchanged += 1
            return
        record = FileRecord(f.rel, ext, size, f.mtime_ns, checksum, "ok", None)
        self.write(record, row, chunks)
        if rec is None:
            counts.added += 1
        else:
            counts.updated += 1
        logger.debug("indexed %s (%d chunks)", f.rel, len(chunks))

    def write(self, record: FileRecord, row: FileRow | None, chunks: list[NewChunk]) -> None:
        """Insert under a new version, flip the file row to it, delete the old version."""
        import numpy as np

        old = row.version if row is not None else None
        # Chunks of a version that never became current: a pass killed before its flip.
        self.index.delete_chunks(record.path, keep=old)
        version = new_version()
        title = chunks[0].title if chunks else ""
        vectors = []
        for i in range(0, len(chunks), EMBED_BATCH):
            batch = chunks[i : i + EMBED_BATCH]
            vectors.append(
                self.embedder.embed_documents([embedding_text(title, c.text) for c in batch])
            )
            if self.progress:  # a stop lands between two batches; the count stays put
                self.progress(Progress("reading", self.done - 1, self.total, record.path))
        empty = np.zeros((0, self.embedder.dimension), dtype=np.float32)
        dense = np.concatenate(vectors) if vectors else empty
        self.embedded = len(chunks)
        self.index.insert_chunks(record.path, version, title, chunks, dense)
        self.index.put_file(record, version, previous=old or 0)
        if old is not None:
            self.finish(FileRow(record, version, 0.0, old))

    def finish(self, row: FileRow) -> None:
        """Delete the chunks of the version a file was flipped from, then the note of it."""
        self.index.delete_chunks(row.record.path, version=row.previous)
        self.index.put_file(row.record, row.version)

    def _failed(
        self,
        f: ScannedFile,
        row: FileRow | None,
        ext: str,
        size: int,
        e: ReadError,
        counts: SyncCounts,
    ) -> None:
        if not f.path.exists():  # deleted between the scan and the read
            if row is not None:
                forget(self.index, f.rel)
                counts.removed += 1
            return
        failed = failure_record(f, ext, size, e)
        self.index.put_file(failed, 0)
        if row is not None:
            self.index.delete_chunks(f.rel)
        counts.failed.append((f.rel, failed.error or ""))
