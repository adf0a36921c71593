"""Two installations on one folder, one with an image reader (the ocr extra) and one
without: the one that cannot read images leaves their text alone, and says so in status.

Which readers each has is given by a module named in its settings (``tests/readerkit.py``:
an image reader that takes the file's bytes as its text; ``tests/lackingkit.py``: none).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from micro_rag_mcp.core.results import ReindexReport
from micro_rag_mcp.local.engine import Engine
from tests.fakes import FakeEmbedder
from tests.indexkit import catalog_rows, write
from tests.readerkit import gate, waiting
from tests.settingskit import make_settings

SCAN_TEXT = "the scanned minutes of the heron society"


def run(data: Path, with_ocr: bool) -> tuple[ReindexReport, dict[str, int]]:
    """One installation's pass over ``data``, and what its status says it keeps."""
    if with_ocr:
        settings = make_settings(data, exts=(".md", ".png"), readers="tests.readerkit")
    else:  # its image formats are not among the types it indexes, as without the extra
        settings = make_settings(data, exts=(".md",), readers="tests.lackingkit")
    engine = Engine(settings, FakeEmbedder)
    try:
        return engine.reindex(), engine.status().kept
    finally:
        engine.stop()


@pytest.mark.parametrize("first_with_ocr", [True, False])
def test_an_installation_without_an_image_reader_keeps_the_images_text(
    data: Path, first_with_ocr: bool
) -> None:
    scan = write(data / "scan.png", SCAN_TEXT, mtime=time.time() - 60)  # a stamp to trust
    gate(scan).touch()  # read at once
    write(data / "note.md", "a note", mtime=time.time() - 60)
    order = [first_with_ocr, not first_with_ocr, first_with_ocr, not first_with_ocr]
    reads = 0
    for with_ocr in order:
        waiting(scan).unlink(missing_ok=True)
        report, kept = run(data, with_ocr)
        reads += waiting(scan).exists()  # the image reader was asked for the scan
        assert report.files_removed == 0 and report.files_failed == []
        if "scan.png" in catalog_rows(data / "index"):
            assert catalog_rows(data / "index")["scan.png"] == [SCAN_TEXT]
        assert kept == ({} if with_ocr else {".png": 1} if reads else {})
    assert reads == 1  # read once, by the first installation that could, never again
    assert catalog_rows(data / "index")["scan.png"] == [SCAN_TEXT]


def test_the_installation_without_an_image_reader_does_not_call_it_a_change_of_scope(
    data: Path, caplog: pytest.LogCaptureFixture
) -> None:
    scan = write(data / "scan.png", SCAN_TEXT, mtime=time.time() - 60)
    gate(scan).touch()
    run(data, with_ocr=True)
    caplog.clear()
    run(data, with_ocr=False)
    run(data, with_ocr=True)
    assert "scope changed" not in caplog.text


def test_an_image_deleted_is_removed_by_an_installation_that_cannot_read_it(data: Path) -> None:
    scan = write(data / "scan.png", SCAN_TEXT)
    gate(scan).touch()
    run(data, with_ocr=True)
    scan.unlink()
    report, kept = run(data, with_ocr=False)
    assert report.files_removed == 1 and kept == {}
    assert "scan.png" not in catalog_rows(data / "index")
