"""A folder full of odd and hostile files: each problem file gets a reason, the rest is indexed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from micro_rag_mcp.core.results import Progress, ReindexReport
from micro_rag_mcp.local.engine import Engine
from tests.docfactory import (
    Heading,
    make_docx,
    make_encrypted_pdf,
    make_garbage_file,
    make_pdf,
    make_truncated_pdf,
    make_zip_bomb_docx,
)
from tests.fakes import FakeEmbedder
from tests.formatfactory import make_blank_scan
from tests.settingskit import make_settings

pytestmark = pytest.mark.slow

ODD_NAMES = ["with space.txt", "ünïcödé ファイル.md", "new\nline.txt"]
DEEP = "/".join(["deep"] * 100) + "/bottom.txt"

EXPECTED_FAILURES = {
    "corrupt.pdf": "PDF",
    "truncated.pdf": "PDF",
    "password.pdf": "password",
    "scanned.pdf": "no extractable text",
    "notzip.docx": "not a zip",
    "bomb.docx": "zip bomb",
    "binary.txt": "binary",
    "empty.txt": "empty",
    "empty.md": "empty",
    "huge.txt": "limit",
}


def build(data: Path, outside: Path) -> None:
    make_garbage_file(data / "corrupt.pdf")
    make_truncated_pdf(data / "truncated.pdf", ["Page one of a PDF that will be cut."] * 3)
    make_encrypted_pdf(data / "password.pdf", "s3cret", ["Hidden text."])
    make_encrypted_pdf(data / "open-encrypted.pdf", "", ["Readable encrypted text."])
    make_blank_scan(data / "scanned.pdf")  # no words: a reason with or without OCR
    (data / "notzip.docx").write_bytes(b"This is not a zip archive at all.")
    make_zip_bomb_docx(data / "bomb.docx")
    (data / "binary.txt").write_bytes(bytes(range(256)) * 64)
    (data / "invalid-utf8.txt").write_bytes(
        "café crème brûlée, ".encode() + b"then \xff broken bytes"
    )
    (data / "utf16.txt").write_bytes("UTF-16 text with a BOM: ½ ∑".encode("utf-16"))
    (data / "empty.txt").write_bytes(b"")
    (data / "empty.md").write_text("   \n\n  ")
    (data / "huge.txt").write_text("word " * 600_000)  # 3 MB, over the 2 MB limit below
    make_pdf(data / "good.pdf", ["A good PDF about volcanoes."])
    make_docx(data / "good.docx", [Heading("Glaciers"), "A good DOCX about glaciers."])
    for name in ODD_NAMES:
        (data / name).write_text(f"Odd name file: {name}")
    (data / DEEP).parent.mkdir(parents=True)
    (data / DEEP).write_text("The bottom of a very deep folder.")
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret tokens")
    os.symlink(outside / "secret.txt", data / "link-to-secret.txt")
    os.symlink(outside, data / "link-to-outside")
    os.symlink(data, data / "loop")


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[tuple[Engine, ReindexReport, Path]]:
    data = tmp_path / "docs"
    data.mkdir()
    build(data, tmp_path / "outside")
    eng = Engine(make_settings(data, max_file_bytes=2 * 1024 * 1024), FakeEmbedder)
    eng.load_model()
    yield eng, eng.reindex(), data


def test_every_problem_file_gets_a_reason_and_every_other_file_is_indexed(
    hostile: tuple[Engine, ReindexReport, Path],
) -> None:
    eng, report, _ = hostile
    reasons = dict(report.files_failed)
    assert set(reasons) == set(EXPECTED_FAILURES)
    for name, needle in EXPECTED_FAILURES.items():
        assert needle.lower() in reasons[name].lower(), (name, reasons[name])
    good = {"open-encrypted.pdf", "invalid-utf8.txt", "utf16.txt", "good.pdf", "good.docx", DEEP}
    assert report.files_added == len(good) + len(ODD_NAMES)
    state = eng.state()
    assert (state.files_indexed, state.files_failed) == (len(good) + 3, len(EXPECTED_FAILURES))


def test_decoded_text_is_right_for_odd_encodings(
    hostile: tuple[Engine, ReindexReport, Path],
) -> None:
    eng, _, _ = hostile
    utf16 = eng.search("UTF-16 text with a BOM", top_k=1).hits[0].chunk
    assert utf16.path == "utf16.txt" and "½ ∑" in utf16.text
    bad = eng.search("broken bytes", top_k=1).hits[0].chunk
    assert bad.path == "invalid-utf8.txt" and bad.text.startswith("café crème brûlée, then \ufffd")


def test_odd_names_and_deep_paths_come_back_exactly(
    hostile: tuple[Engine, ReindexReport, Path],
) -> None:
    eng, _, _ = hostile
    paths = {h.chunk.path for h in eng.search("odd name file", top_k=10).hits}
    assert set(ODD_NAMES) <= paths
    assert eng.search("bottom of a very deep folder", top_k=1).hits[0].chunk.path == DEEP


def test_nothing_outside_the_folder_is_ever_read_or_returned(
    hostile: tuple[Engine, ReindexReport, Path],
) -> None:
    eng, report, _ = hostile
    hits = eng.search("outside secret tokens", top_k=50, score_threshold=0.0).hits
    assert all("secret" not in h.chunk.text for h in hits)
    assert not any("link" in p or "loop" in p for p, _ in report.files_failed)


def test_failed_files_are_not_read_again_until_they_change(
    hostile: tuple[Engine, ReindexReport, Path],
) -> None:
    eng, _, data = hostile
    for name in EXPECTED_FAILURES:  # age the stamps past the racy window
        os.utime(data / name, (1e9, 1e9))
    eng.reindex()
    again = eng.reindex()
    assert again.files_added == again.files_updated == 0
    assert {p for p, _ in again.files_failed} == set(EXPECTED_FAILURES)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_gets_a_reason(data: Path) -> None:
    (data / "locked.txt").write_text("private")
    (data / "locked.txt").chmod(0)
    eng = Engine(make_settings(data), FakeEmbedder)
    eng.load_model()
    assert [p for p, _ in eng.reindex().files_failed] == ["locked.txt"]


def test_file_deleted_or_rewritten_between_scan_and_read(data: Path) -> None:
    """A pass lists the folder, then reads it file by file: the files change as it tells
    (``progress``, called as each file is stored) of the first file read, one of two short
    files that come first (cheap and small files are read first)."""
    from micro_rag_mcp.local.layout import IndexPaths, ensure_folder, open_for_writing
    from micro_rag_mcp.local.passes.indexer import sync_files

    for first in ("a-first.txt", "z-first.txt"):
        (data / first).write_text("first")
    (data / "gone.txt").write_text("about to vanish")
    (data / "moving.txt").write_text("old words")
    told: list[str] = []

    def change_after_the_first_read(progress: Progress) -> None:
        if not progress.item:  # a read's start names no stored file
            return
        if not told:
            (data / "gone.txt").unlink()
            (data / "moving.txt").write_text("brand new words, longer than before")
        told.append(progress.item)

    eng = Engine(make_settings(data), FakeEmbedder)
    paths = IndexPaths(data / "index")
    ensure_folder(paths.folder, data)
    catalog = open_for_writing(paths)
    counts = sync_files(catalog, eng.settings, progress=change_after_the_first_read)
    catalog.close()
    assert told[0].endswith("-first.txt"), told  # the change came before the two were read
    assert counts.failed == [] and counts.added == 3
    eng.load_model()
    eng.reindex()
    paths_found = [h.chunk.path for h in eng.search("brand new words", top_k=5).hits]
    assert paths_found[0] == "moving.txt" and paths_found.count("moving.txt") == 1
    assert all(h.chunk.path != "gone.txt" for h in eng.search("vanish", top_k=5).hits)
    follow_up = eng.reindex()  # the stamp recorded before the rewrite is not trusted
    assert follow_up.files_failed == [] and eng.state().files_indexed == 3
