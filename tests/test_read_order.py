"""A pass reads the cheap files first: notes are searchable while a scan is still read.

The scan's reader (``tests/readerkit.py``, named in the settings so that the real reader
process loads it) waits until the test lets it go, so the order is seen, not timed.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

from micro_rag_mcp.core.errors import Stopped
from micro_rag_mcp.core.results import ReindexReport
from micro_rag_mcp.ingest.files import read_cost
from micro_rag_mcp.ingest.scanner import ScannedFile
from micro_rag_mcp.local.engine import Engine
from tests.fakes import FakeEmbedder
from tests.indexkit import catalog_rows, write
from tests.readerkit import gate, waiting
from tests.settingskit import make_settings
from tests.waiting import eventually

NOTES = ("notes/alpha.md", "notes/beta.md", "zeta.txt")


def stored(data: Path) -> set[str]:
    """The files whose text is in the catalog: keyword search finds them from then on."""
    try:
        return set(catalog_rows(data / "index"))
    except sqlite3.Error:  # not made yet
        return set()


def test_notes_are_searchable_while_a_scan_that_sorts_first_is_still_read(data: Path) -> None:
    scan = write(data / "archive" / "scan.png", "scanned words about a heron")
    for rel in NOTES:
        write(data / rel, f"a note about {rel}")
    settings = make_settings(data, exts=(".md", ".txt", ".png"), readers="tests.readerkit")
    engine = Engine(settings, FakeEmbedder)
    reports: list[ReindexReport] = []

    def reindex() -> None:
        with contextlib.suppress(Stopped):  # a failed test stops it
            reports.append(engine.reindex())

    running = threading.Thread(target=reindex, daemon=True)
    running.start()
    try:
        # A pass in path order would wait on archive/scan.png before any note.
        eventually(lambda: stored(data) == set(NOTES), "every note stored")
        eventually(lambda: waiting(scan).exists(), "the scan's reader waits")
        assert "archive/scan.png" not in stored(data)  # the scan is read last
        gate(scan).touch()
        running.join(60)
        assert stored(data) == {*NOTES, "archive/scan.png"}
        hits = engine.search("heron", top_k=1, score_threshold=0.0).hits
        assert hits[0].chunk.path == "archive/scan.png"
        assert reports and reports[0].files_added == 4
    finally:
        gate(scan).touch()
        engine.stop()


def test_reading_order_takes_formats_by_cost_then_size() -> None:
    def f(rel: str, size: int) -> ScannedFile:
        return ScannedFile(rel, rel, size, 0)

    files = [
        f("a/scan.png", 10),
        f("b/big.pdf", 9_000_000),
        f("c/small.pdf", 20_000),
        f("d/report.docx", 50_000),
        f("e/long.md", 400_000),
        f("f/short.txt", 100),
    ]
    order = [x.rel for x in sorted(files, key=read_cost)]
    assert order == [
        "f/short.txt",
        "e/long.md",
        "d/report.docx",
        "c/small.pdf",
        "b/big.pdf",
        "a/scan.png",
    ]
