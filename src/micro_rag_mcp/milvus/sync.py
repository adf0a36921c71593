"""A reindex pass into a Milvus store: the embedded pass's reading, files written in batches.

The folder is scanned and each file read and chunked exactly as ``indexer`` does it
(``scan``, ``extract_chunks``, ``embedding_text``); unchanged files are skipped by their size
and mtime, then by their text's checksum. Changed files wait in a batch (``batch_chunks``
chunks), whose chunks are embedded together, since a chunk in Milvus always has its
vector. A batch is written in the steps of ``milvus_store``, each one request for the
whole batch, and each file is old or new after any of them:

1. the file rows note the versions about to be written (``previous``); a file new to
   the store gets a row of status ``writing``, which no search, read or count shows;
2. the new chunks (and the pairs of a file with CJK text, ``gram_rows``) are inserted
   under those versions;
3. the rows flip to them, noting the replaced versions instead;
4. every chunk (and grams row) of those files but the current version's is deleted;
5. the notes are cleared.

A pass first finishes what a killed one noted, so only a file with a note costs a
delete by filter: milvus-lite reads every row of the collection for each, which made
such deletes nine tenths of its time while a pass wrote new files.

With a shard (``I/N``), the pass owns only the paths whose hash falls in its share, both
to index and to delete, so N workers cover one folder with no lock between them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from micro_rag_mcp.core.records import FileRecord, NewChunk
from micro_rag_mcp.core.results import Progress, ProgressFn
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.ingest.extra_readers import lacking, left_to_others, read_here
from micro_rag_mcp.ingest.files import (
    EMBED_BATCH,
    SyncCounts,
    decide,
    gone_paths,
    read_cost,
    scan_rules,
)
from micro_rag_mcp.ingest.isolation import IsolatedReader
from micro_rag_mcp.ingest.readers import Document
from micro_rag_mcp.ingest.scanner import ScannedFile, Scope, scan
from micro_rag_mcp.ingest.skipped import Meta
from micro_rag_mcp.ingest.skipped import record as record_skipped
from micro_rag_mcp.milvus.index import MilvusIndex
from micro_rag_mcp.milvus.rows import WRITING, FileRow, chunk_rows, gram_rows, new_version
from micro_rag_mcp.milvus.shards import in_shard
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.text.vector_text import embedding_text

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

# Chunks embedded and written together: each step of a write is one request for the whole
# batch, so a larger batch is fewer round trips (with synthetic vectors one worker wrote
# 305 chunks/s in batches of 64, 749 in batches of 1024). A worker killed mid-batch
# embeds at most this many again.
BATCH_CHUNKS = 1024


@dataclass(frozen=True, slots=True)
class _Write:
    """A file about to be written: its new record and chunks, and its row as it is."""

    record: FileRecord
    row: FileRow | None
    chunks: list[NewChunk]


def sync_store(
    index: MilvusIndex,
    embedder: Embedder,
    settings: Settings,
    *,
    shard: tuple[int, int] | None = None,
    scope: Scope | None = None,
    force: bool = False,
    progress: ProgressFn | None = None,
    batch_chunks: int = BATCH_CHUNKS,
    skipped: Meta | None = None,
) -> tuple[SyncCounts, int]:
    """Make the store match this shard's files in scope; returns what changed and how
    many chunks were embedded. What the scan left out is recorded in ``skipped``."""
    counts = SyncCounts()
    known = _finish_writes(index, index.files(shard=shard))  # this share's rows only
    listing = scan(scan_rules(settings), scope)
    if skipped is not None:
        record_skipped(skipped, listing.skipped, scope)
    found = sorted((f for f in listing.files if in_shard(f.rel, shard)), key=read_cost)
    # Files of formats this installation cannot read stay as another one stored them.
    others = lacking(settings.readers)
    found = [f for f in found if read_here(f.rel, known, others)]
    gone = left_to_others(settings.data_folder, gone_paths(known, listing, scope), others)
    total = len(found) + len(gone)
    for done, rel in enumerate(gone, 1):
        forget(index, rel)
        counts.removed += 1
        if progress:
            progress(Progress("reading", done, total, rel))
    writer = _BatchWriter(index, embedder, progress, batch_chunks)
    with IsolatedReader(
        settings.data_folder, settings.read_timeout_s, readers=settings.readers
    ) as reader:

        def read(path: Path) -> Document:
            return reader.read(path, max_bytes=settings.max_file_bytes)

        for done, f in enumerate(found, len(gone) + 1):
            write = _examine(index, settings, read, f, known.get(f.rel), force, counts)
            if write is not None:
                writer.add(write, Progress("reading", done, total, f.rel))
            if progress:
                progress(Progress("reading", done, total, f.rel))
        writer.flush()
    if counts.added or counts.updated or counts.removed or counts.failed:
        index.seal()  # searches use indexed segments from here on
    return counts, writer.embedded


def _finish_writes(index: MilvusIndex, known: dict[str, FileRow]) -> dict[str, FileRow]:
    """Clear what writes killed before their clean-up left; the rows as they are then.

    A noted file keeps only its current version's chunks (a new file none, and its
    ``writing`` row goes). Rows are changed only after the chunks are gone, so a pass
    killed here leaves the notes for the next one."""
    noted = [row for row in known.values() if row.previous]
    if not noted:
        return known
    index.delete_strays([(row.record.path, row.version) for row in noted])
    unborn = {row.record.path for row in noted if row.record.status == WRITING}
    index.drop_files(sorted(unborn))
    cleared = [replace(row, previous=0) for row in noted if row.record.path not in unborn]
    index.put_files(cleared)
    logger.info("finished %d writes a killed pass left", len(noted))
    kept = {p: r for p, r in known.items() if p not in unborn}
    return kept | {row.record.path: row for row in cleared}


def forget(index: MilvusIndex, rel: str) -> None:
    """A file is gone: its row first (readers stop seeing it), then its chunks."""
    index.drop_files([rel])
    index.delete_chunks(rel)
    logger.debug("removed %s", rel)


def _examine(
    index: MilvusIndex,
    settings: Settings,
    read: Callable[[Path], Document],
    f: ScannedFile,
    row: FileRow | None,
    force: bool,
    counts: SyncCounts,
) -> _Write | None:
    """Settle one file that needs no new chunks; return the write of one that does."""
    rec = row.record if row is not None else None
    stamp = (rec.size, rec.mtime_ns) if rec is not None else None
    ok_before = rec is not None and rec.status == "ok"
    decision = decide(f, stamp, lambda: rec, read, settings, force=force, ok_before=ok_before)
    decision.count(counts)
    record = decision.record
    if decision.outcome == "gone":
        if row is not None:
            forget(index, f.rel)
    elif decision.outcome == "failed":
        assert record is not None
        index.put_file(FileRow(record, 0))
        if row is not None:
            index.delete_chunks(f.rel)
    elif decision.outcome == "touched":
        assert record is not None and row is not None
        index.put_file(replace(row, record=record))  # same version: only the stamp changes
    elif decision.outcome == "stored":
        assert record is not None
        return _Write(record, row, list(decision.chunks))
    return None


class _BatchWriter:
    """Files waiting to be embedded and written together."""

    def __init__(
        self,
        index: MilvusIndex,
        embedder: Embedder,
        progress: ProgressFn | None,
        batch_chunks: int,
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.progress = progress
        self.batch_chunks = batch_chunks
        self.pending: list[_Write] = []
        self.at: Progress | None = None  # where the pass is, reported between embeddings
        self.embedded = 0

    def add(self, write: _Write, at: Progress) -> None:
        self.pending.append(write)
        self.at = at
        if sum(len(w.chunks) for w in self.pending) >= self.batch_chunks:
            self.flush()

    def flush(self) -> None:
        """Embed the pending files' chunks, then write them in the order that keeps each
        file old or new: the new versions noted, their chunks in, rows flipped, every
        other version out."""
        writes, self.pending = self.pending, []
        if not writes:
            return
        vectors = self._embed(writes)
        versions = {w.record.path: new_version() for w in writes}
        self.index.put_files([_intent(w, versions[w.record.path]) for w in writes])
        rows, grams = [], []
        for w, dense in zip(writes, vectors, strict=True):
            title = w.chunks[0].title if w.chunks else ""
            version = versions[w.record.path]
            rows.extend(chunk_rows(w.record.path, version, w.chunks, dense))
            spans = [(c.text, c.char_start, c.char_end) for c in w.chunks]
            grams.extend(gram_rows(w.record.path, version, title, spans))
        ids = self.index.insert_chunks(rows)
        self.index.pairs.insert_grams(grams)
        now, at = [], 0
        for w in writes:  # each file's first chunk comes first among its rows
            head = ids[at] if w.chunks else -1
            now.append(FileRow(w.record, versions[w.record.path], _version(w.row), head))
            at += len(w.chunks)
        self.index.put_files(now)
        flipped = [row for row in now if row.previous]
        if flipped:
            self.index.delete_strays([(row.record.path, row.version) for row in flipped])
            self.index.put_files([replace(row, previous=0) for row in flipped])

    def _embed(self, writes: list[_Write]) -> list[npt.NDArray[np.float32]]:
        """Each file's vectors, in order; a stop is looked for between two model calls."""
        import numpy as np

        texts = [embedding_text(c.title, c.text) for w in writes for c in w.chunks]
        parts = []
        for i in range(0, len(texts), EMBED_BATCH):
            parts.append(self.embedder.embed_documents(texts[i : i + EMBED_BATCH]))
            if self.progress and self.at is not None:
                self.progress(self.at)
        self.embedded += len(texts)
        empty = np.zeros((0, self.embedder.dimension), dtype=np.float32)
        matrix = np.concatenate(parts) if parts else empty
        ends = np.cumsum([len(w.chunks) for w in writes])
        return [matrix[end - len(w.chunks) : end] for w, end in zip(writes, ends, strict=True)]


def _intent(write: _Write, version: int) -> FileRow:
    """A file's row noting the version about to be written, its current state unchanged."""
    if write.row is None:  # shown nowhere until the flip
        return FileRow(replace(write.record, status=WRITING), 0, previous=version)
    return replace(write.row, previous=version)


def _version(row: FileRow | None) -> int:
    return row.version if row is not None else 0
