"""An index of another version is rebuilt beside itself: searches answer from the old one
until the new one is complete, every vector whose text is unchanged is reused, and a kill
at any instant leaves an index that opens and converges."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import Stopped
from micro_rag_mcp.core.results import Progress
from micro_rag_mcp.local.catalog import INDEX_VERSION, Catalog, OtherVersion, version_of
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.layout import IndexPaths
from micro_rag_mcp.local.rebuild import REBUILD, SWAP_MARKER
from tests.fakes import FakeEmbedder
from tests.indexkit import chunk_keys, vector_ids, write
from tests.settingskit import make_settings

NOTES = {f"n{i:02d}.txt": f"Note {i} on the heron colony at the lake shore." for i in range(12)}


def engine(data: Path, embedder: FakeEmbedder) -> Engine:
    eng = Engine(make_settings(data), lambda: embedder)
    eng.load_model()
    return eng


def indexed(data: Path) -> FakeEmbedder:
    """Index the notes; the embedder that made the vectors (it counts what it embeds)."""
    for rel, text in NOTES.items():
        write(data / rel, text)
    embedder = FakeEmbedder()
    eng = engine(data, embedder)
    eng.reindex()
    eng.stop()
    return embedder


def set_version(index: Path, version: str) -> None:
    """Make the index look as another release's (the tables are the same)."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'index_version'", (version,))
    conn.commit()
    conn.close()


def page_size(catalog: Path, size: int | None = None) -> int:
    """The catalog's page size, first set to ``size`` if given (as an older release's)."""
    conn = sqlite3.connect(catalog, isolation_level=None)
    if size is not None:
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute(f"PRAGMA page_size = {size}")
        conn.execute("VACUUM")
        conn.execute("PRAGMA journal_mode = WAL")
    found = int(conn.execute("PRAGMA page_size").fetchone()[0])
    conn.close()
    return found


def files_under(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


@pytest.mark.parametrize("other", ["4", "99"])  # older, and newer and unknown
def test_an_index_of_another_version_is_rebuilt_reusing_every_vector(
    data: Path, other: str
) -> None:
    embedder = indexed(data)
    index = data / "index"
    set_version(index, other)
    before = embedder.embedded
    eng = engine(data, embedder)
    report = eng.reindex()
    assert report.files_added == len(NOTES) and report.chunks_embedded == 0
    assert embedder.embedded == before  # a rebuild costs reading, not embedding
    assert version_of(index / "catalog.sqlite3") == INDEX_VERSION
    assert vector_ids(index) == chunk_keys(index)
    assert not (index / REBUILD).exists()
    assert eng.search("heron colony note 7", top_k=1).hits[0].chunk.path == "n07.txt"
    assert eng.state().chunks_with_vectors == len(NOTES)
    assert eng.reindex().files_added == 0  # the version is current now
    eng.stop()


def test_an_index_of_other_pages_is_rebuilt_into_its_place(data: Path) -> None:
    """A catalog made with 4 KiB pages (releases before 16 KiB) takes the rebuilt one's
    pages in its own size: SQLite copies no other into a WAL database."""
    embedder = indexed(data)
    catalog = data / "index" / "catalog.sqlite3"
    assert page_size(catalog) == 16384
    assert page_size(catalog, 4096) == 4096
    set_version(data / "index", "5")
    eng = engine(data, embedder)
    assert eng.reindex().files_added == len(NOTES)
    assert version_of(catalog) == INDEX_VERSION and page_size(catalog) == 4096
    assert eng.search("heron colony note 7", top_k=1).hits[0].chunk.path == "n07.txt"
    eng.stop()


def test_searches_during_a_rebuild_answer_from_the_old_index(data: Path) -> None:
    embedder = indexed(data)
    index = data / "index"
    set_version(index, "4")
    write(data / "n03.txt", "Note 3 now speaks of pelicans diving for fish.")
    write(data / "n99.txt", "A note on the egrets, new since the old index was made.")
    eng = engine(data, embedder)
    seen: list[tuple[str, str | int | None, bool]] = []

    def search_meanwhile(p: Progress) -> None:
        if p.phase == "reading" and p.done == len(NOTES) // 2:
            hit = eng.search("heron colony note 3", top_k=1).hits[0]  # vectors loaded too
            seen.append((hit.chunk.text, version_of(index / "catalog.sqlite3"), True))

    eng.reindex(progress=search_meanwhile)
    assert seen and "heron" in seen[0][0] and seen[0][1] == 4  # the old index answered
    assert eng.state().chunks_with_vectors == len(NOTES) + 1  # the new vectors, at once
    hit = eng.search("pelicans diving for fish", top_k=1).hits[0]
    assert hit.chunk.path == "n03.txt" and "pelicans" in hit.chunk.text
    eng.stop()


def test_a_rebuild_stopped_half_way_leaves_the_old_index_serving_and_is_taken_up(
    data: Path,
) -> None:
    embedder = indexed(data)
    index = data / "index"
    set_version(index, "4")
    before = embedder.embedded
    eng = engine(data, embedder)

    def stop_half_way(p: Progress) -> None:
        if p.phase == "reading" and p.done == len(NOTES) // 2:
            raise Stopped("stopped for the test")

    with pytest.raises(Stopped):
        eng.reindex(progress=stop_half_way)
    eng.stop()
    assert (index / REBUILD / "catalog.sqlite3").exists()  # the half-built sibling
    assert version_of(index / "catalog.sqlite3") == 4
    again = engine(data, embedder)
    assert again.search("heron colony note 9", top_k=1).hits[0].chunk.path == "n09.txt"
    report = again.reindex()
    assert report.files_added + report.files_unchanged == len(NOTES)
    assert embedder.embedded == before
    assert version_of(index / "catalog.sqlite3") == INDEX_VERSION
    assert vector_ids(index) == chunk_keys(index) and not (index / REBUILD).exists()
    again.stop()


def complete_rebuild_beside(data: Path, tmp_path: Path) -> tuple[FakeEmbedder, Path]:
    """An old index (version 4, of the notes before an edit) with a complete rebuild of
    the edited notes beside it and the swap's marker written: the state a kill leaves
    just after the rebuild was declared complete. The edited note's text is returned."""
    embedder = indexed(data)
    old = tmp_path / "old-index"
    shutil.copytree(data / "index", old)
    write(data / "n05.txt", "Note 5 now records a flock of spoonbills.")
    eng = engine(data, embedder)
    eng.reindex()
    eng.stop()
    new = data / "index"
    shutil.move(new, tmp_path / "new-index")
    shutil.move(old, new)
    set_version(new, "4")
    built = new / REBUILD
    shutil.copytree(tmp_path / "new-index", built)
    files = [n for n in ("faiss.index", "hnsw.index") if (built / n).exists()]
    (built / SWAP_MARKER).write_text(json.dumps({"files": files}))
    return embedder, built


@pytest.mark.parametrize("done", ["marked", "vectors moved", "catalog copied", "marker gone"])
def test_a_swap_a_kill_interrupted_is_finished_at_the_next_pass(
    data: Path, tmp_path: Path, done: str
) -> None:
    embedder, built = complete_rebuild_beside(data, tmp_path)
    index = data / "index"
    if done != "marked":
        os.replace(built / "faiss.index", index / "faiss.index")
    if done in ("catalog copied", "marker gone"):
        src = sqlite3.connect(built / "catalog.sqlite3")
        dst = sqlite3.connect(index / "catalog.sqlite3")
        src.backup(dst)
        src.close()
        dst.close()
    if done == "marker gone":
        (built / SWAP_MARKER).unlink()
    before = embedder.embedded
    eng = engine(data, embedder)
    if done in ("marked", "vectors moved"):  # the old catalog serves until the swap ends
        hit = eng.search("spoonbills flock", top_k=1).hits
        assert not hit or "spoonbills" not in hit[0].chunk.text
    report = eng.reindex()
    assert embedder.embedded == before and report.chunks_embedded == 0
    assert version_of(index / "catalog.sqlite3") == INDEX_VERSION
    assert not built.exists()
    assert vector_ids(index) == chunk_keys(index)
    hit = eng.search("spoonbills flock", top_k=1).hits[0]
    assert hit.chunk.path == "n05.txt" and "spoonbills" in hit.chunk.text
    eng.stop()


def test_a_catalog_of_another_version_is_never_written_by_opening_it(data: Path) -> None:
    indexed(data)
    catalog = data / "index" / "catalog.sqlite3"
    set_version(catalog.parent, "4")
    before = catalog.read_bytes()
    with pytest.raises(OtherVersion):
        Catalog.open(catalog)
    assert catalog.read_bytes() == before
    wal = catalog.with_name("catalog.sqlite3-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_rebuild_writes_nothing_outside_the_index_folder(data: Path, tmp_path: Path) -> None:
    embedder = indexed(data)
    set_version(data / "index", "4")
    outside = {p: s for p, s in files_under(tmp_path).items() if not p.startswith("docs/index")}
    eng = engine(data, embedder)
    eng.reindex()
    eng.stop()
    after = {p: s for p, s in files_under(tmp_path).items() if not p.startswith("docs/index")}
    assert after == outside
    assert IndexPaths(data / "index").catalog.exists()


def test_a_second_server_searching_the_old_index_sees_the_new_one_after_the_swap(
    data: Path,
) -> None:
    embedder = indexed(data)
    set_version(data / "index", "4")
    write(data / "n03.txt", "Note 3 now speaks of pelicans diving for fish.")
    reader = engine(data, FakeEmbedder())  # searches only: its connections stay open
    assert reader.search("heron colony note 3", top_k=1).hits[0].chunk.path == "n03.txt"
    assert all("pelicans" not in h.chunk.text for h in reader.search("pelicans diving").hits)
    writer = engine(data, embedder)
    writer.reindex()
    writer.stop()
    hit = reader.search("pelicans diving for fish", top_k=1).hits[0]
    assert hit.chunk.path == "n03.txt" and "pelicans" in hit.chunk.text
    assert hit.score is not None and hit.score > 0.5  # the vector channel: the new vectors
    assert reader.state().chunks_with_vectors == len(NOTES)
    reader.stop()
