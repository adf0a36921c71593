"""The index folder is ours or it is refused: a folder of someone's notes is never used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ConfigError, IndexWriteError
from micro_rag_mcp.core.fsutil import atomic_write_bytes
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.layout import check_index_folder, ensure_folder
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings

NOTE = "Pelicans fish by plunging their pouched bills into the sea.\n"


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for a folder)."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in root.rglob("*")
    }


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A folder whose ``index/`` subfolder holds the person's own notes."""
    data = tmp_path / "docs"
    (data / "index").mkdir(parents=True)
    (data / "index" / "pelican.md").write_text(NOTE)
    (data / "birds.md").write_text("Herons stand still in shallow water.\n")
    return data


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def one_line_naming_the_flag(out: subprocess.CompletedProcess[str]) -> bool:
    lines = out.stderr.strip().splitlines()
    return out.returncode == 2 and len(lines) == 1 and "--index-folder" in lines[0]


@pytest.mark.slow  # starts the command or the server as a process
@pytest.mark.parametrize(
    "args",
    [["index"], ["search", "pelicans"], ["status"], ["read", "birds.md"]],
)
def test_every_command_refuses_a_default_index_folder_of_notes_and_writes_nothing(
    notes: Path, args: list[str]
) -> None:
    before = tree(notes.parent)
    out = run("micro_rag_mcp.cli.app", args[0], str(notes), *args[1:])
    assert one_line_naming_the_flag(out), out.stderr
    assert str(notes / "index") in out.stderr
    assert tree(notes.parent) == before


@pytest.mark.slow  # starts the command or the server as a process
def test_the_server_refuses_a_default_index_folder_of_notes_and_writes_nothing(
    notes: Path,
) -> None:
    before = tree(notes.parent)
    out = run("micro_rag_mcp", "--data-folder", str(notes), "--title", "t", "--inst", "i")
    assert one_line_naming_the_flag(out), out.stderr
    assert out.stdout == ""
    assert tree(notes.parent) == before


@pytest.mark.slow  # starts the command or the server as a process
def test_a_given_index_folder_that_holds_other_files_is_refused(
    notes: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "papers"
    elsewhere.mkdir()
    (elsewhere / "thesis.txt").write_text("Chapter one.")
    before = tree(tmp_path)
    server = run(
        "micro_rag_mcp", "--data-folder", str(notes), "--title", "t", "--inst", "i",
        "--index-folder", str(elsewhere),
    )  # fmt: skip
    cli = run("micro_rag_mcp.cli.app", "index", str(notes), "--index-folder", str(elsewhere))
    for out in (server, cli):
        assert one_line_naming_the_flag(out), out.stderr
        assert f"--index-folder {elsewhere}" in out.stderr
    assert tree(tmp_path) == before


def test_with_the_index_elsewhere_the_notes_in_index_are_indexed(
    notes: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "kept" / "index"
    check_index_folder(elsewhere, given=True)  # new: accepted
    engine = Engine(make_settings(notes, index_folder=elsewhere), FakeEmbedder)
    engine.load_model()
    try:
        report = engine.reindex()
        hits = engine.search("pelicans plunging pouched bills", top_k=1).hits
    finally:
        engine.stop()
    assert report.files_added == 2
    assert hits and hits[0].chunk.path == "index/pelican.md"
    assert (notes / "index" / "pelican.md").read_text() == NOTE
    assert sorted(p.name for p in (notes / "index").iterdir()) == ["pelican.md"]
    check_index_folder(elsewhere, given=True)  # now ours: accepted again


@pytest.mark.parametrize("given", [False, True])
def test_a_new_or_empty_folder_is_accepted_and_one_without_our_marker_is_not(
    tmp_path: Path, given: bool
) -> None:
    check_index_folder(tmp_path / "new", given=given)
    empty = tmp_path / "empty"
    empty.mkdir()
    check_index_folder(empty, given=given)
    (empty / ".micro-rag-index.json.x1y2.tmp").write_text("{")  # a save a kill interrupted
    check_index_folder(empty, given=given)
    (empty / "catalog.sqlite3").write_text("my own notes, by an unlucky name")
    with pytest.raises(ConfigError, match="--index-folder"):
        check_index_folder(empty, given=given)


def test_the_writer_never_marks_a_folder_of_someone_elses_files(notes: Path) -> None:
    with pytest.raises(IndexWriteError):
        ensure_folder(notes / "index")
    assert sorted(p.name for p in (notes / "index").iterdir()) == ["pelican.md"]


def test_the_index_files_are_as_readable_as_the_catalog(data: Path) -> None:
    """Files written whole (vectors, marker) get the mode the catalog gets.

    The catalog holds the documents' text: a vector file made private while the catalog
    is not protects nothing, and makes an index another account may read half unreadable.
    """
    (data / "a.md").write_text(NOTE)
    engine = Engine(make_settings(data), FakeEmbedder)
    engine.load_model()
    try:
        engine.reindex()
    finally:
        engine.stop()
    index = data / "index"
    catalog_mode = (index / "catalog.sqlite3").stat().st_mode & 0o777
    written = {
        p.name: p.stat().st_mode & 0o777
        for p in index.iterdir()
        if p.is_file() and not p.name.endswith(".lock")
    }
    assert {"faiss.index", "micro-rag-index.json"} <= written.keys()
    assert written == dict.fromkeys(written, catalog_mode)


def test_a_file_written_again_keeps_the_mode_it_was_given(tmp_path: Path) -> None:
    path = tmp_path / "vectors"
    atomic_write_bytes(path, b"one")
    path.chmod(0o600)
    atomic_write_bytes(path, b"two")
    assert path.read_bytes() == b"two"
    assert path.stat().st_mode & 0o777 == 0o600
