"""Two installations on one Milvus store, one with an image reader and one without: the
one that cannot read images leaves their rows alone, as on the embedded store
(``test_two_installations.py``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.indexkit import write
from tests.milvuskit import MilvusServer, store_engine
from tests.readerkit import gate, waiting

pytestmark = pytest.mark.slow  # a real milvus-lite

SCAN_TEXT = "the scanned minutes of the heron society"


def test_a_store_installation_without_an_image_reader_keeps_the_images_rows(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    data = tmp_path / "docs"
    scan = write(data / "scan.png", SCAN_TEXT, mtime=time.time() - 60)
    gate(scan).touch()
    write(data / "note.md", "a note", mtime=time.time() - 60)
    config = milvus.config()
    installs = {
        True: {"exts": (".md", ".png"), "readers": "tests.readerkit"},
        False: {"exts": (".md",), "readers": "tests.lackingkit"},
    }
    reads = 0
    for with_ocr in (True, False, True):
        waiting(scan).unlink(missing_ok=True)
        engine = store_engine(data, config, **installs[with_ocr])
        try:
            report = engine.reindex()
            assert report.files_removed == 0
            assert engine.read("scan.png").text == SCAN_TEXT
        finally:
            engine.stop()
        reads += waiting(scan).exists()
    assert reads == 1
