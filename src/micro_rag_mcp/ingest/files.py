"""One file's way into a store, the same for both backends.

The folder's scan rules, the stamp a file is recorded with, its text cut into located
chunks, the record of a file that cannot be read, and the counts of a pass: the local
writer (``local.indexer``) and the Milvus sync (``milvus.sync``) share all of it, so a
file means the same thing in either store.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.core.formats import FORMATS
from micro_rag_mcp.core.records import FileRecord, NewChunk
from micro_rag_mcp.core.results import ReindexReport
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.ingest.readers import Document
from micro_rag_mcp.ingest.readers.document import SECTION_SEPARATOR
from micro_rag_mcp.ingest.scanner import ScannedFile, ScanResult, ScanRules, Scope
from micro_rag_mcp.text.chunking import Locator, chunk_text

logger = logging.getLogger(__name__)

EMBED_BATCH = 32  # chunks embedded per step: a stop waits for one step (about a second idle)
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


# What reading a format costs, as a tier: plain text and markup (0) read at megabytes a
# second; zipped XML (Office, OpenDocument, EPUB) is unpacked and parsed first (1); a PDF
# is laid out page by page, and its pages without a text layer are recognized by OCR (2);
# an image is all OCR, seconds a page (3).
_TIERS: dict[str, int] = {
    suffix: 3 if fmt.extra == "ocr" else 2 if fmt.name == "PDF" else 1 if fmt.zip_member else 0
    for fmt in FORMATS
    for suffix in fmt.suffixes
}


def read_cost(f: ScannedFile) -> tuple[int, int, str]:
    """Where a file comes in a pass's reading order: cheap formats first, by size within
    a format's tier, then by path. A first start of a folder of notes beside two scans makes
    the notes searchable in seconds, not after the scans' minutes of OCR."""
    dot = f.rel.rfind(".")
    return _TIERS.get(f.rel[dot:].lower() if dot > 0 else "", 0), f.size, f.rel


def gone_paths(known: Iterable[str], listing: ScanResult, scope: Scope | None) -> list[str]:
    """The recorded paths in scope that the folder no longer holds (a folder that could
    not be listed may still hold its files: they are kept)."""
    on_disk = {f.rel for f in listing.files}
    return [
        p
        for p in known
        if p not in on_disk and (scope is None or scope.matches(p)) and not listing.may_hold(p)
    ]


def unlisted_records(listing: ScanResult) -> list[FileRecord]:
    """A failure for each folder the scan could not list (its path ends in "/"), so that
    it is counted among the failures, with its reason, until it can be listed again. The
    data folder itself is not one: a scan that cannot list it has nothing to index."""
    return [
        FileRecord(
            prefix, "", -1, 0, None, "failed", f"cannot list this folder: {listing.why[prefix]}"
        )
        for prefix in listing.unlisted
        if prefix and prefix in listing.why
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


def stamp_size(f: ScannedFile) -> int:
    """The size to record, or -1 when the file changed too recently to trust its stamp.

    Two writes within one tick of the file-system clock can leave the same size and
    mtime; a stamp taken that close to a write is recorded as unknown, so the next
    reindex compares the text's checksum instead of trusting it (git's "racy" rule).
    """
    return -1 if time.time_ns() - f.mtime_ns < RACY_WINDOW_NS else f.size


def extract_chunks(doc: Document, path: Path, settings: Settings) -> tuple[str, list[NewChunk]]:
    """Chunk and locate one document; raise ReadError if it has no text.

    A PDF is chunked page by page, so every passage cites exactly one page; likewise no
    passage spans one of the document's breaks (a sheet, a slide) or the start of a
    section (``section_starts``): a heading opens the passage of its section's text,
    never ends the one before it. A passage's title is its heading path (``heading``),
    but for a paged document's: a PDF's outline names generic parts ("Part I › Item 2")
    of pages that are passages already, and joined to them it cost sec10q_dev 1.3 points
    of Hit@5 (docs/benchmarks.md). Table rows are kept whole: a document with rows is
    chunked at row ends without overlap. Lines are given for documents without pages,
    locators or rows (lines of the extracted text).
    """
    if not doc.text.strip():
        raise ReadError("no extractable text (empty document)")
    title = document_title(path, doc.title)
    locate = Locator(
        doc.text, doc.page_starts, sections=doc.sections, locators=doc.locators, rows=doc.rows
    )
    starts = section_starts(doc.sections, settings.chunk_size // 4)
    bounds = sorted({0, *doc.page_starts, *doc.breaks, *starts})
    segments = zip(bounds, [*bounds[1:], len(doc.text)], strict=True)
    overlap = 0 if doc.rows else settings.chunk_overlap
    with_lines = not (doc.page_starts or doc.locators or doc.rows)
    chunks: list[NewChunk] = []
    for seg_start, seg_end in segments:
        for c in chunk_text(doc.text[seg_start:seg_end], settings.chunk_size, overlap):
            start, end = seg_start + c.start, seg_start + c.end
            first, last = locate.lines(start, end) if with_lines else (None, None)
            section = locate.section(start)
            chunks.append(
                NewChunk(
                    len(chunks),
                    start,
                    end,
                    first,
                    last,
                    locate.page(start),
                    heading(title, None if doc.page_starts else section),
                    c.text,
                    section=section,
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


def section_starts(sections: Sequence[tuple[int, str]], least: int) -> list[int]:
    """Where a section starts, but for one that would leave the text since the last
    start shorter than ``least`` characters: a heading right above a subheading, or a
    run of short sections, stays in one passage with what follows."""
    starts: list[int] = []
    last = 0
    for offset, _ in sections:
        if offset - last >= least:
            starts.append(offset)
            last = offset
    return starts


def heading(title: str, section: str | None) -> str:
    """A passage's heading: its file's title and the heading path it sits under
    (``runbook › Errors › ERR-4471 Lock timeout``). It is stored as the chunk's title: the
    keyword channel's title column and the line above the text a passage is embedded as,
    so a query naming a section's heading finds the whole section, not only the passage
    that holds the heading's line."""
    if not section:
        return title
    return f"{title}{SECTION_SEPARATOR}{section}" if title else section


Outcome = Literal["unchanged", "gone", "failed", "touched", "stored"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What one pass does with one file, the same in both stores.

    ``unchanged``: its stamp says so (nothing was read). ``gone``: deleted between the
    scan and the read. ``failed``: ``record`` says why it cannot be read. ``touched``:
    read, and its text is what is stored; only ``record``'s stamp is new. ``stored``:
    ``record`` and ``chunks`` replace what was stored (``known`` is what that was).
    """

    outcome: Outcome
    known: FileRecord | None = None
    record: FileRecord | None = None
    chunks: tuple[NewChunk, ...] = ()
    ok_before: bool = True  # an unchanged file was indexed, not failed

    def count(self, counts: SyncCounts) -> None:
        """Add this file to the pass's counts."""
        if self.outcome == "unchanged":
            counts.left_as_it_was(ok=self.ok_before)
        elif self.outcome == "gone":
            counts.removed += self.known is not None
        elif self.outcome == "failed":
            assert self.record is not None
            counts.failed.append((self.record.path, self.record.error or ""))
        elif self.outcome == "touched":
            counts.left_as_it_was(ok=True)
        elif self.known is None:
            counts.added += 1
        else:
            counts.updated += 1


def decide(
    f: ScannedFile,
    stamp: tuple[int, int] | None,
    known: Callable[[], FileRecord | None],
    read: Callable[[Path], Document],
    settings: Settings,
    *,
    force: bool,
    ok_before: bool = True,
) -> Decision:
    """What to do with one scanned file: skip it by its recorded ``stamp`` (size,
    mtime_ns; None: not recorded), else read it and compare its text's checksum with
    what is ``known`` of it (asked only once the file is read). ``force`` reads and
    stores whatever the stamp and the checksum say."""
    if stamp is not None and not force and stamp == (f.size, f.mtime_ns):
        return Decision("unchanged", ok_before=ok_before)
    rec = known() if stamp is not None else None
    ext = os.path.splitext(f.rel)[1].lower()
    size = stamp_size(f)
    try:
        text, chunks = extract_chunks(read(f.path), f.path, settings)
    except ReadError as e:
        if not f.path.exists():
            return Decision("gone", known=rec)
        return Decision("failed", known=rec, record=failure_record(f, ext, size, e))
    checksum = text_checksum(text)
    record = FileRecord(f.rel, ext, size, f.mtime_ns, checksum, "ok", None)
    if rec is not None and not force and rec.status == "ok" and rec.checksum == checksum:
        return Decision("touched", known=rec, record=record)
    return Decision("stored", known=rec, record=record, chunks=tuple(chunks))
