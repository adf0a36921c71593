"""The engine's parts: the model handle, scoped refreshes, and stopping between two steps."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from micro_rag_mcp.core.errors import InvalidArgument, ModelUnavailable
from micro_rag_mcp.core.results import ModelState
from micro_rag_mcp.ingest.files import EMBED_BATCH
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.passes.pipeline import Steps
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.model.handle import ModelHandle
from tests.fakes import FakeEmbedder, GatedEmbedder
from tests.indexkit import catalog_rows, chunk_keys, vector_ids, write
from tests.settingskit import make_settings
from tests.waiting import eventually


def test_model_handle_loads_once_in_the_background_and_reports_its_state() -> None:
    loads: list[int] = []
    release = threading.Event()

    def slow_load() -> FakeEmbedder:
        loads.append(1)
        release.wait(30)
        return FakeEmbedder()

    model = ModelHandle(slow_load)
    assert model.get(0.0) is None and model.state is ModelState.LOADING  # the load began
    model.start()
    release.set()
    assert model.get(30.0) is not None and model.state is ModelState.READY
    assert loads == [1]


def test_model_handle_that_failed_says_why_and_never_blocks() -> None:
    def broken() -> FakeEmbedder:
        raise ModelUnavailable("model.safetensors is missing")

    model = ModelHandle(broken)
    model.start()
    eventually(lambda: model.state is not ModelState.LOADING)
    assert model.state is ModelState.FAILED and model.error == "model.safetensors is missing"
    assert model.get(30.0) is None


class ReleasingEmbedder(FakeEmbedder):
    """A fake that counts the times it was asked to give its working memory back."""

    def __init__(self) -> None:
        super().__init__()
        self.releases = 0
        self.embedded_at_release: list[int] = []

    def release_memory(self) -> None:
        self.releases += 1
        self.embedded_at_release.append(self.embedded)


def test_the_model_gives_its_memory_back_after_each_pass(data: Path) -> None:
    write(data / "a.txt", "Apples.", mtime=1e6)
    embedder = ReleasingEmbedder()
    eng = Engine(make_settings(data), lambda: embedder)
    eng.load_model()
    try:
        eng.reindex()
        assert embedder.embedded_at_release == [1]  # after the pass had embedded its chunk
        write(data / "b.txt", "Bananas.", mtime=1e6)
        eng.refresh(["b.txt"])
        assert embedder.embedded_at_release == [1, 2]
    finally:
        eng.stop()


def test_a_model_that_fails_to_release_memory_does_not_fail_the_pass(data: Path) -> None:
    write(data / "a.txt", "Apples.", mtime=1e6)

    class Failing(FakeEmbedder):
        def release_memory(self) -> None:
            raise RuntimeError("arena trouble")

    eng = Engine(make_settings(data), Failing)
    eng.load_model()
    try:
        assert eng.reindex().files_added == 1
    finally:
        eng.stop()


def test_refresh_looks_only_at_the_given_paths(engine: Engine, data: Path) -> None:
    write(data / "a.txt", "Apples.", mtime=1e6)
    write(data / "b.txt", "Bananas.", mtime=1e6)
    write(data / "notes" / "c.md", "Cherries.", mtime=1e6)
    engine.reindex()
    write(data / "a.txt", "Apricots.")
    write(data / "b.txt", "Blueberries.")
    (data / "notes" / "c.md").unlink()
    report = engine.refresh(["a.txt", "notes"])  # a folder takes what is under it
    assert (report.files_updated, report.files_removed, report.files_unchanged) == (1, 1, 0)
    assert catalog_rows(data / "index") == {"a.txt": ["Apricots."], "b.txt": ["Bananas."]}
    assert vector_ids(data / "index") == chunk_keys(data / "index")
    with pytest.raises(InvalidArgument):
        engine.refresh(["../outside.txt"])


def test_stop_ends_the_start_up_pass_after_one_step_and_keeps_its_vectors(data: Path) -> None:
    for i in range(3 * EMBED_BATCH):
        write(data / f"note{i:03d}.txt", f"Note number {i} about topic {i % 7}.")
    embedder = GatedEmbedder()
    embedder.gate.clear()
    eng = Engine(make_settings(data), lambda: embedder)
    eng.start()
    eventually(embedder.held.is_set)  # the pass is inside its first embedding step
    eng.stop(timeout=0)  # asked to stop while the step runs
    embedder.gate.set()  # the step ends; the pass must not begin another
    eng.stop()
    assert 0 < embedder.embedded <= EMBED_BATCH  # one step: the files read by then, 16 at most
    saved = VectorStore.load(data / "index" / "faiss.index", 64)
    assert len(saved) == embedder.embedded
    assert set(saved.ids().tolist()) <= chunk_keys(data / "index")
    assert not eng.state().indexing


def test_the_reading_progress_keeps_up_with_the_files_while_a_step_embeds(data: Path) -> None:
    for i in range(8):
        write(data / f"note{i}.txt", f"Note number {i} about topic {i}.")
    embedder = GatedEmbedder()
    embedder.gate.clear()  # the first step is held while reading goes on
    eng = Engine(make_settings(data), lambda: embedder, steps=Steps(size=1))
    eng.start()
    try:
        eventually(embedder.held.is_set, "a step is held")
        eventually(lambda: eng.state().files_indexed == 8, "every file is read")

        def says_all_read() -> bool:  # the last file's progress follows its commit
            state = eng.state()
            return (state.phase, state.done, state.total, state.files_indexed) == (
                "reading", 8, 8, 8,
            )  # fmt: skip

        eventually(says_all_read, "the progress says every file is read, as the index does")
        assert embedder.held.is_set() and not embedder.gate.is_set()  # the step still runs
    finally:
        embedder.gate.set()
        eng.stop()


@pytest.mark.slow  # the real watcher
def test_a_reindex_at_once_after_start_waits_for_the_start_up_pass_with_watching_on(
    data: Path,
) -> None:
    for i in range(5):
        write(data / f"note{i}.txt", f"Note number {i}.")
    eng = Engine(make_settings(data, watch="auto"), FakeEmbedder)
    eng.start()
    try:
        report = eng.reindex()  # before the watcher is even ready
        # Answered by the start-up pass: the watcher takes what changes after it read.
        assert report.files_added == 5 and report.files_unchanged == 0
        eventually(lambda: not eng.state().indexing)
        assert eng.state().files_indexed == 5
    finally:
        eng.stop()


class ThreadRecordingEmbedder(FakeEmbedder):
    """Remembers which threads embedded a query."""

    def __init__(self) -> None:
        super().__init__()
        self.query_threads: list[int] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.query_threads.append(threading.get_ident())
        return super().embed_query(text)


def test_a_search_embeds_its_query_beside_the_keyword_channel(data: Path) -> None:
    write(data / "a.txt", "Harbor cranes unload the cargo vessel.", mtime=1e6)
    write(data / "b.txt", "The orchard grows pears and apples.", mtime=1e6)
    embedder = ThreadRecordingEmbedder()
    engine = Engine(make_settings(data), lambda: embedder)
    try:
        engine.load_model()
        engine.reindex()
        outcome = engine.search("cargo vessel", top_k=1, score_threshold=0.0)
    finally:
        engine.stop()
    assert [h.chunk.path for h in outcome.hits] == ["a.txt"]
    hit = outcome.hits[0]
    assert hit.score is not None and set(hit.channels) == {"vector", "keyword"}
    assert embedder.query_threads and threading.get_ident() not in embedder.query_threads


def test_a_search_after_stop_still_answers_from_both_channels(data: Path) -> None:
    write(data / "a.txt", "Harbor cranes unload the cargo vessel.", mtime=1e6)
    engine = Engine(make_settings(data), FakeEmbedder)
    engine.load_model()
    engine.reindex()
    engine.stop()
    outcome = engine.search("cargo vessel", top_k=1, score_threshold=0.0)
    assert [h.chunk.path for h in outcome.hits] == ["a.txt"]
    assert set(outcome.hits[0].channels) == {"vector", "keyword"}


def test_a_failing_query_embedding_fails_the_search_with_its_own_error(data: Path) -> None:
    class Broken(FakeEmbedder):
        def embed_query(self, text: str) -> np.ndarray:
            raise ModelUnavailable("the query could not be embedded")

    write(data / "a.txt", "Harbor cranes unload the cargo vessel.", mtime=1e6)
    engine = Engine(make_settings(data), Broken)
    try:
        engine.load_model()
        engine.reindex()
        with pytest.raises(ModelUnavailable, match="could not be embedded"):
            engine.search("cargo vessel")
    finally:
        engine.stop()
