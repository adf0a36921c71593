"""A damaged, foreign, read-only or full index: clear messages, recovery, documents untouched."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import IndexWriteError
from micro_rag_mcp.core.fsutil import atomic_write_bytes
from micro_rag_mcp.local.engine import Engine
from tests.diskkit import fail_listing
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings

DOCS = {
    "a.txt": "Apples grow on trees in the orchard.",
    "b.md": "# Bananas\n\nBananas are yellow and curved.",
    "sub/c.txt": "Cherries are small, red and sweet.",
}


def fresh_engine(data: Path) -> Engine:
    eng = Engine(make_settings(data), FakeEmbedder)
    eng.load_model()
    return eng


@pytest.fixture
def indexed(data: Path) -> Path:
    for rel, text in DOCS.items():
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_text(text)
    fresh_engine(data).reindex()
    return data


def documents_untouched(data: Path) -> bool:
    return all((data / rel).read_text() == text for rel, text in DOCS.items())


def assert_converged(data: Path) -> None:
    eng = fresh_engine(data)
    report = eng.reindex()
    state = eng.state()
    assert (state.files_indexed, state.chunks_total, state.chunks_with_vectors) == (3, 3, 3)
    assert report.files_failed == []
    assert eng.search("cherries red", top_k=1).hits[0].chunk.path == "sub/c.txt"
    assert documents_untouched(data)


def test_truncated_vector_file_is_rebuilt_from_the_catalog(
    indexed: Path, caplog: pytest.LogCaptureFixture
) -> None:
    vectors = indexed / "index" / "faiss.index"
    vectors.write_bytes(vectors.read_bytes()[:100])
    eng = fresh_engine(indexed)
    report = eng.reindex()
    assert report.chunks_embedded == 3 and report.files_unchanged == 3
    assert "unreadable" in caplog.text
    assert_converged(indexed)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_damaged_catalog_is_moved_aside_and_rebuilt(
    indexed: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = indexed / "index" / "catalog.sqlite3"
    if damage == "garbage":
        catalog.write_bytes(os.urandom(64 * 1024))
    elif damage == "truncated":
        catalog.write_bytes(catalog.read_bytes()[:3000])
    else:
        catalog.write_bytes(b"")
    eng = fresh_engine(indexed)
    outcome = eng.search("apples", top_k=3)  # before the rebuild: an answer, not a crash
    assert outcome.hits == [] or all(h.chunk.path in DOCS for h in outcome.hits)
    eng.reindex()
    if damage != "empty":  # an empty file is a valid empty database to SQLite
        assert list((indexed / "index").glob("catalog.sqlite3.broken-*"))
        assert "moving it aside" in caplog.text
    assert_converged(indexed)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """Make the folder and its files unwritable, even for root (ext4 immutable flag)."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [folder, *folder.iterdir()]}
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    targets = [str(folder), *(str(p) for p in folder.iterdir())]
    if not shutil.which("chattr") or subprocess.run(["chattr", "+i", *targets]).returncode:
        pytest.skip("cannot make a folder read-only for root here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *targets], check=True)


def test_read_only_index_folder_reindex_fails_clearly_and_search_keeps_serving(
    indexed: Path,
) -> None:
    (indexed / "d.txt").write_text("Dates are sweet fruits from palm trees.")
    with read_only(indexed / "index"):
        eng = fresh_engine(indexed)
        with pytest.raises(IndexWriteError) as err:
            eng.reindex()
        assert str(indexed / "index") in str(err.value)
        hits = eng.search("cherries red", top_k=1).hits
        assert hits and hits[0].chunk.path == "sub/c.txt"
    eng = fresh_engine(indexed)
    assert eng.reindex().files_added == 1


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.core.errors import MicroRagError
from micro_rag_mcp.core.settings import Settings
from tests.fakes import FakeEmbedder
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
data = Path(sys.argv[1])
eng = Engine(Settings(data_folder=data, index_folder=data / "index"), FakeEmbedder)
eng.load_model()
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # every larger write fails
try:
    eng.reindex()
except MicroRagError as e:
    print("ERROR", e)
else:
    print("OK")
"""


@pytest.mark.slow  # over a second: kept out of the fast lane
def test_full_disk_during_reindex_is_a_clear_error_and_the_index_still_opens(
    indexed: Path,
) -> None:
    big = " ".join(f"word{i} appears in the long document." for i in range(20_000))
    (indexed / "big.txt").write_text(big)
    out = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(indexed), "200000"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parent.parent,
    )
    assert out.stdout.startswith("ERROR"), out.stdout + out.stderr
    assert "index" in out.stdout
    # The documents were committed whole or not at all; the index opens and converges.
    eng = fresh_engine(indexed)
    eng.reindex()
    assert eng.state().files_indexed == 4
    conn = sqlite3.connect(indexed / "index" / "catalog.sqlite3")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_a_full_disk_at_start_up_never_sets_a_healthy_catalog_aside(indexed: Path) -> None:
    (indexed / "d.txt").write_text("Dates are sweet fruits from palm trees.")
    out = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(indexed), "1"],  # not even the WAL can grow
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parent.parent,
    )
    assert out.stdout.startswith("ERROR"), out.stdout + out.stderr
    assert not list((indexed / "index").glob("*.broken-*"))
    eng = fresh_engine(indexed)
    assert eng.search("cherries red", top_k=1).hits[0].chunk.path == "sub/c.txt"
    report = eng.reindex()
    assert report.files_added == 1 and report.chunks_embedded == 1  # nothing re-embedded


def test_a_failed_vector_save_is_written_by_the_next_reindex(indexed: Path) -> None:
    (indexed / "d.txt").write_text("Dates are sweet fruits from palm trees.")
    disk_full = [True]

    def write_vectors(path: Path, data: bytes) -> None:
        if disk_full[0]:
            raise OSError(28, "No space left on device")
        atomic_write_bytes(path, data)

    eng = Engine(make_settings(indexed), FakeEmbedder, write_vectors=write_vectors)
    eng.load_model()
    with pytest.raises(IndexWriteError, match="No space left"):
        eng.reindex()
    disk_full[0] = False
    assert eng.reindex().chunks_embedded == 0  # the vector made before is saved, not made again
    other = fresh_engine(indexed)  # another process reads what was saved
    state = other.search("dates palm", top_k=1).state
    assert state.chunks_with_vectors == state.chunks_total == 4


def test_vectors_of_a_deleted_catalog_are_never_given_to_its_successor(indexed: Path) -> None:
    eng = fresh_engine(indexed)
    assert eng.search("apples orchard", top_k=1).hits[0].chunk.path == "a.txt"
    for f in (indexed / "index").glob("catalog.sqlite3*"):
        f.unlink()  # a user removes the catalog but not faiss.index
    (indexed / "a.txt").unlink()  # so the new catalog numbers its chunks differently
    eng.reindex()
    hits = eng.search("bananas yellow curved", top_k=3).hits
    assert hits[0].chunk.path == "b.md" and hits[0].score is not None and hits[0].score > 0.5
    assert all(h.chunk.path != "a.txt" for h in hits)
    assert_vectors_match_text(indexed)


def assert_vectors_match_text(data: Path) -> None:
    """Every chunk's vector is the embedding of its own text."""
    import numpy as np

    from micro_rag_mcp.local.vectors.store import VectorStore
    from micro_rag_mcp.text.vector_text import embedding_text

    conn = sqlite3.connect(data / "index" / "catalog.sqlite3")
    rows = list(conn.execute("SELECT vkey, title, text FROM chunks"))
    conn.close()
    store = VectorStore.load(data / "index" / "faiss.index", 64)
    fake = FakeEmbedder()
    for key, title, text in rows:
        got = store.similarity(fake.embed_query(embedding_text(title, text)), [key])
        assert np.isclose(got[key], 1.0, atol=1e-5), (key, text)


def test_files_in_a_folder_that_cannot_be_listed_are_kept(
    indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail_listing(monkeypatch, "sub")
    report = fresh_engine(indexed).reindex()
    assert report.files_removed == 0
    monkeypatch.undo()
    assert fresh_engine(indexed).search("cherries", top_k=1).hits[0].chunk.path == "sub/c.txt"
