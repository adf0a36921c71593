"""The index while it works: changes during a long pass, and vectors that belong to text."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from micro_rag_mcp.core.errors import DataFolderGone, IndexWriteError
from micro_rag_mcp.core.results import ReindexReport
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.watch.changes import Batch
from tests.fakes import FakeEmbedder, GatedEmbedder
from tests.indexkit import chunk_keys, vector_ids
from tests.settingskit import make_settings
from tests.waiting import eventually

pytestmark = pytest.mark.slow


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (1e6, 1e6))  # old enough that its stamp is trusted
    return path


def paths_found(eng: Engine, query: str) -> set[str]:
    """The files whose passages the keyword channel finds for ``query``."""
    hits = eng.search(query, top_k=10, score_threshold=0).hits
    return {h.chunk.path for h in hits if "keyword" in h.channels}


def test_a_change_during_a_long_pass_is_searchable_before_the_pass_ends(data: Path) -> None:
    for i in range(20):
        write(data / f"note{i:02d}.txt", f"Routine incident note number {i}.")
    write(data / "doomed.txt", "The quokka report is obsolete.")
    embedder = GatedEmbedder()
    embedder.gate.clear()  # the pass embeds nothing until the test says so
    eng = Engine(make_settings(data, watch="auto"), lambda: embedder)
    eng.load_model()
    eng.start()  # the start-up pass, held at its first step
    try:
        eventually(embedder.held.is_set, "the start-up pass is embedding")
        eventually(lambda: "doomed.txt" in paths_found(eng, "quokka"), "the first files stored")
        write(data / "late" / "fresh.txt", "Ticket ZX-4471 concerns the wombat gateway.")
        (data / "doomed.txt").unlink()
        eventually(
            lambda: paths_found(eng, "ZX-4471 wombat") == {"late/fresh.txt"},
            "the new file found by keyword during the pass",
        )
        eventually(lambda: not paths_found(eng, "quokka"), "the deleted file gone from results")
        assert eng.state().indexing  # the pass is still held at its first step
    finally:
        embedder.gate.set()
    eventually(lambda: not eng.state().indexing, "the pass ended")
    state = eng.state()
    assert state.chunks_with_vectors == state.chunks_total == 21
    eng.stop()
    assert vector_ids(data / "index") == chunk_keys(data / "index")


def test_the_chunks_of_a_change_noted_for_a_pass_are_embedded_first(data: Path) -> None:
    for i in range(300):
        write(data / f"note{i:03d}.txt", f"Routine incident note number {i}.")
    embedder = GatedEmbedder()
    eng = Engine(make_settings(data), lambda: embedder)
    eng.load_model()
    done: list[ReindexReport] = []
    embedder.gate.clear()
    runner = threading.Thread(target=lambda: done.append(eng.reindex()))
    runner.start()
    try:
        eventually(embedder.held.is_set, "the pass is embedding")
        eventually(lambda: len(paths_found(eng, "routine")) == 10, "files stored")
        write(data / "urgent.txt", "Outage of the kestrel cluster.")
        eng._note_changes(["urgent.txt"])  # what the watcher does while a pass runs
        eventually(lambda: "urgent.txt" in paths_found(eng, "kestrel"), "the change taken")
        texts: list[str] = []
        real = embedder.embed_documents

        def recording(batch: list[str]) -> np.ndarray:
            texts.extend(batch)
            return real(batch)

        embedder.embed_documents = recording  # type: ignore[method-assign]
    finally:
        embedder.gate.set()
    runner.join(60)
    assert done and done[0].files_added == 301
    # The held step, then the noted file's chunk before any other still waiting.
    later = [t for t in texts if "Routine" in t or "kestrel" in t]
    assert any("kestrel" in t for t in later[:33]), later[:40]
    eng.stop()


def test_moving_a_folder_keeps_every_vector_and_embeds_nothing(data: Path) -> None:
    for i in range(12):
        write(data / "incidents" / f"n{i}.md", f"# Note {i}\n\nThe pump {i} failed at dawn.")
    embedder = FakeEmbedder()
    eng = Engine(make_settings(data), lambda: embedder)
    eng.load_model()
    eng.reindex()
    before = embedder.embedded
    ids = _chunk_ids(data / "index")
    (data / "incidents").rename(data / "archive")
    report = eng.reindex()
    assert (report.files_added, report.files_removed, report.files_unchanged) == (12, 12, 0)
    assert report.chunks_embedded == 0 and embedder.embedded == before
    assert _chunk_ids(data / "index") == ids  # recorded as moved: not one file read again
    shutil.copytree(data / "archive", data / "copy")
    assert eng.reindex().chunks_embedded == 0  # a copy shares its text's vectors
    state = eng.state()
    assert state.chunks_with_vectors == state.chunks_total == 24
    best = eng.search("pump 7 failed", top_k=2).hits[0]  # the copy is one result, twice placed
    places = {best.chunk.path} | {c.path for c in best.elsewhere}
    assert places == {"archive/n7.md", "copy/n7.md"} and best.repeats == 1
    assert best.score is not None  # one vector, shared: the copy embedded nothing
    eng.stop()
    assert vector_ids(data / "index") == chunk_keys(data / "index")


def _chunk_ids(index: Path) -> set[int]:
    conn = sqlite3.connect(index / "catalog.sqlite3")
    ids = {int(r[0]) for r in conn.execute("SELECT id FROM chunks")}
    conn.close()
    return ids


def test_an_edit_embeds_only_the_chunks_whose_text_changed(data: Path) -> None:
    paragraphs = [f"Paragraph {i} of the handbook says thing number {i}." for i in range(40)]
    write(data / "handbook.txt", "\n\n".join(paragraphs))
    embedder = FakeEmbedder()
    eng = Engine(make_settings(data, chunk_size=200, chunk_overlap=0), lambda: embedder)
    eng.load_model()
    first = eng.reindex()
    assert first.chunks_total > 8
    paragraphs[-3] = "Paragraph 37 was rewritten entirely."
    write(data / "handbook.txt", "\n\n".join(paragraphs))
    report = eng.reindex()
    assert report.files_updated == 1
    assert 1 <= report.chunks_embedded <= 2
    eng.stop()


def test_a_forced_pass_stopped_midway_keeps_every_vector_it_started_with(data: Path) -> None:
    for i in range(40):
        write(data / f"n{i:02d}.txt", f"Note {i} about the heron survey.")
    embedder = FakeEmbedder()
    eng = Engine(make_settings(data), lambda: embedder)
    eng.load_model()
    eng.reindex()
    saved = vector_ids(data / "index")
    seen: list[int] = []

    def stop_after_some(p: object) -> None:
        seen.append(1)
        if len(seen) == 15:
            eng._stop.set()  # the server stopping in the middle of the forced pass

    try:
        eng.reindex(force=True, progress=stop_after_some)
    except Exception as e:
        assert type(e).__name__ == "Stopped"
    eng.stop()
    assert vector_ids(data / "index") == saved == chunk_keys(data / "index")


def test_a_refresh_that_cannot_write_keeps_its_changes_and_succeeds_later(data: Path) -> None:
    write(data / "a.txt", "Alpha.")
    embedder = FakeEmbedder()
    failing = threading.Event()
    failing.set()
    eng = Engine(make_settings(data, watch="auto"), lambda: embedder)
    real_refresh = eng.refresh

    def refresh(paths: object) -> ReindexReport:
        if failing.is_set():
            raise IndexWriteError("cannot write the index: database or disk is full")
        return real_refresh(paths)  # type: ignore[arg-type]

    eng._watcher._refresh = refresh  # the seam the watcher calls
    eng._watcher.retry_s = eng._watcher.retry_max_s = 0.05
    eng.load_model()
    eng.start()
    eventually(lambda: not eng.state().indexing and eng.state().watch == "watching", "ready")
    for i in range(5):
        write(data / f"new{i}.txt", f"Zebra finch sighting {i}.")
    eventually(lambda: eng.state().queue_fault is not None, "the failed refresh said so")
    outcome = eng.search("zebra finch")
    assert any("disk is full" in n and "retried" in n for n in outcome.notices)
    failing.clear()
    eventually(lambda: len(paths_found(eng, "zebra finch")) == 5, "the changes indexed later")
    eventually(lambda: eng.state().queue_fault is None, "the fault cleared")
    eng.stop()


def test_changes_noted_for_a_pass_stay_noted_until_a_pass_takes_them(data: Path) -> None:
    write(data / "a.txt", "Alpha.")
    eng = Engine(make_settings(data), FakeEmbedder)
    eng.load_model()
    eng.reindex()
    write(data / "b.txt", "Bravo of the pelican.")
    eng._note_changes(["b.txt"])
    catalog = Catalog.open(data / "index" / "catalog.sqlite3")
    assert catalog.writes.take_pending() == ["b.txt"] and catalog.writes.take_pending() == []
    catalog.writes.add_pending(["b.txt"])
    catalog.close()
    eng.reindex(path_glob="a.txt")  # any pass takes what was noted
    assert paths_found(eng, "pelican") == {"b.txt"}
    eng.stop()


# A pass in another process (as ``micro-rag index`` beside a server): it embeds nothing
# until the gate file exists, then ends.
GATED_PASS = """
import sys
from pathlib import Path
from micro_rag_mcp.local.engine import Engine
from tests.settingskit import make_settings
from tests.fakes import FakeEmbedder
from tests.waiting import eventually

class Gated(FakeEmbedder):
    def embed_documents(self, texts):
        eventually(Path(sys.argv[2]).exists, "the gate", timeout=120, interval=0.02)
        return super().embed_documents(texts)

eng = Engine(make_settings(Path(sys.argv[1])), Gated)
eng.load_model()
print("go", flush=True)
report = eng.reindex()
print("done", report.files_added, flush=True)
eng.stop()
"""


def test_a_pass_in_another_process_takes_the_changes_a_watching_server_sees(
    data: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    for i in range(10):
        write(data / f"note{i}.txt", f"Routine incident note number {i}.")
    gate = tmp_path / "gate"
    child = subprocess.Popen(
        [sys.executable, "-c", GATED_PASS, str(data), str(gate)],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    eng = Engine(make_settings(data, watch="auto"), FakeEmbedder)
    try:
        assert child.stdout.readline().strip() == "go"
        eventually(lambda: eng.state().indexing, "the other process holds the index")
        eng.load_model()
        eng.start()  # its start-up pass finds the index busy and leaves it to the other
        eventually(lambda: eng.state().watch == "watching", "the server watches")
        write(data / "late.txt", "The heron gateway failed twice.")
        eventually(
            lambda: paths_found(eng, "heron gateway") == {"late.txt"},
            "the other process's pass took the change",
        )
        assert child.poll() is None  # still held at its first step
    finally:
        gate.touch()
        out, _ = child.communicate(timeout=120)
        eng.stop()
    assert out.split() == ["done", "11"]


def test_a_scope_keeps_out_a_file_that_shares_its_text_with_one_inside(data: Path) -> None:
    from micro_rag_mcp.ingest.scanner import PathGlob
    from micro_rag_mcp.search.scope import SearchScope

    text = "The osprey nest on the north tower was inspected."
    write(data / "a" / "same.txt", text)
    write(data / "b" / "same.txt", text)
    write(data / "b" / "other.txt", "Unrelated budget figures for the year.")
    eng = Engine(make_settings(data), FakeEmbedder)
    eng.load_model()
    eng.reindex()
    assert len(vector_ids(data / "index")) == 2  # the two copies share one vector
    scope = SearchScope(globs=(PathGlob("b/**"),))
    hits = eng.search("osprey nest tower", top_k=5, score_threshold=-1, scope=scope).hits
    assert {h.chunk.path for h in hits} == {"b/same.txt", "b/other.txt"}
    assert hits[0].chunk.path == "b/same.txt" and hits[0].score is not None
    eng.stop()


def test_a_vanished_data_folder_is_said_plainly_and_comes_back_in_a_clear_state(
    tmp_path: Path,
) -> None:
    data = tmp_path / "docs"
    write(data / "a.txt", "The kingfisher survey of the river.")
    eng = Engine(make_settings(data, index_folder=tmp_path / "idx"), FakeEmbedder)
    eng.load_model()
    eng.reindex()
    shutil.rmtree(data)
    outcome = eng.search("kingfisher survey", score_threshold=0)
    assert [h.chunk.path for h in outcome.hits] == ["a.txt"] and outcome.hits[0].stale
    gone = [n for n in outcome.notices if "is gone" in n]
    assert gone and "nothing is reindexed until the folder is back" in gone[0]
    assert not any("being reindexed" in n for n in outcome.notices)
    with pytest.raises(DataFolderGone, match="is gone"):
        eng.reindex()
    assert not data.exists()
    write(data / "b.txt", "The folder is back with the heron survey.")
    report = eng.reindex()
    assert (report.files_added, report.files_removed) == (1, 1)
    eng.stop()


def test_no_index_is_made_anew_inside_a_data_folder_that_is_gone(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    write(data / "a.txt", "The kingfisher survey of the river.")
    eng = Engine(make_settings(data), FakeEmbedder)  # the index inside the data folder
    eng.load_model()
    eng.reindex()
    shutil.rmtree(data)
    with pytest.raises(DataFolderGone, match="is gone"):
        eng.reindex()
    assert not data.exists()  # neither the folder nor an empty index came back
    eng.stop()


def test_a_trickle_of_changes_never_holds_a_quiet_path_back(tmp_path: Path) -> None:
    from micro_rag_mcp.local.watch.changes import ChangeQueue

    queue = ChangeQueue(tmp_path, quiet_s=1.0, max_wait_s=10.0)
    for name in ("a.txt", "b.txt", "c.txt"):
        write(tmp_path / name, name)  # old mtimes: settled
    queue.add(["a.txt"], now=100.0)
    queue.add(["b.txt"], now=100.8)  # the folder is never quiet for a second ...
    assert queue.take(101.5) == Batch(frozenset({"a.txt"}))  # ... but a.txt has been
    queue.add(["c.txt"], now=101.6)
    assert queue.take(101.9) == Batch(frozenset({"b.txt"}))
    assert queue.take(102.0) is None  # c.txt changed 0.4 s ago
    assert queue.take(102.7) == Batch(frozenset({"c.txt"}))
