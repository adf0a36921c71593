"""One file's decision, shared by both stores: skip, read and compare, fail, or store."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from micro_rag_mcp.core.records import FileRecord
from micro_rag_mcp.ingest.files import Decision, SyncCounts, decide
from micro_rag_mcp.ingest.readers import read_document
from micro_rag_mcp.ingest.scanner import ScannedFile
from tests.settingskit import make_settings

OLD_NS = 1_600_000_000_000_000_000  # a stamp old enough to be trusted


def scanned(data: Path, name: str, text: str | bytes) -> ScannedFile:
    path = data / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    os.utime(path, ns=(OLD_NS, OLD_NS))
    st = path.stat()
    return ScannedFile(name, str(path), st.st_size, st.st_mtime_ns)


def read(path: Path) -> Any:
    return read_document(path, max_bytes=1 << 20)


def decided(data: Path, f: ScannedFile, known: FileRecord | None, **kw: Any) -> Decision:
    stamp = (known.size, known.mtime_ns) if known is not None else None
    return decide(f, stamp, lambda: known, read, make_settings(data), **kw)


def test_each_outcome_and_what_it_counts(data: Path) -> None:
    new = scanned(data, "new.md", "# New\n\nA new note.")
    first = decided(data, new, None, force=False)
    assert first.outcome == "stored" and first.chunks and first.record is not None
    stored = first.record

    assert decided(data, new, stored, force=False).outcome == "unchanged"
    assert decided(data, new, stored, force=True).outcome == "stored"  # re-read, stored again

    os.utime(new.path, ns=(OLD_NS + 10**9, OLD_NS + 10**9))
    moved = ScannedFile(new.rel, new.where, new.size, OLD_NS + 10**9)
    touched = decided(data, moved, stored, force=False)
    assert touched.outcome == "touched" and touched.record is not None
    assert touched.record.mtime_ns == OLD_NS + 10**9

    edited = scanned(data, "new.md", "# New\n\nAn edited note.")
    assert decided(data, edited, stored, force=False).outcome == "stored"

    broken = scanned(data, "broken.pdf", b"%PDF-1.4 not really")
    failed = decided(data, broken, None, force=False)
    assert failed.outcome == "failed" and failed.record is not None
    assert failed.record.status == "failed" and failed.record.error

    gone = scanned(data, "gone.md", "soon gone")
    gone.path.unlink()
    assert decided(data, gone, stored, force=False).outcome == "gone"

    counts = SyncCounts()
    for d in (first, touched, failed, decided(data, gone, stored, force=False)):
        d.count(counts)
    Decision("unchanged", ok_before=False).count(counts)  # a file that failed before
    Decision("stored", known=stored, record=stored).count(counts)
    assert (counts.added, counts.updated, counts.removed, counts.unchanged) == (1, 1, 1, 1)
    assert [path for path, _ in counts.failed] == ["broken.pdf"]
