"""Reading and embedding at once: files are embedded while later ones are still read.

The reader process is real; a test holds it on one file (by waiting inside the call that
asks it for that file) to catch the pass with reading and embedding both under way.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from micro_rag_mcp.core.results import Progress
from micro_rag_mcp.ingest.files import EMBED_BATCH
from micro_rag_mcp.ingest.isolation import IsolatedReader
from micro_rag_mcp.ingest.readers import Document
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.passes.pipeline import Steps
from micro_rag_mcp.local.vectors.store import VectorStore
from tests.fakes import FakeEmbedder, GatedEmbedder
from tests.indexkit import catalog_rows, chunk_ids, chunk_keys, vector_ids, write
from tests.settingskit import make_settings
from tests.waiting import eventually

FILES = 3 * EMBED_BATCH
LAST = f"note{FILES - 1:03d}.txt"


NOTES = {f"note{i:03d}.txt": f"Note {i} about the word marker{i}." for i in range(FILES)}


def write_notes(data: Path) -> None:
    for name, text in NOTES.items():
        write(data / name, text)


def hold_last_read(monkeypatch: pytest.MonkeyPatch, until: Callable[[], bool]) -> None:
    """Make the pass wait before it reads its last file until ``until()`` holds (30 s at most)."""
    real = IsolatedReader.read
    reads = 0

    def read(self: IsolatedReader, path: Path, *, max_bytes: int) -> Document:
        nonlocal reads
        reads += 1
        if reads == FILES:
            eventually(until)
        return real(self, path, max_bytes=max_bytes)

    monkeypatch.setattr(IsolatedReader, "read", read)


def found(engine: Engine, word: str) -> set[str]:
    return {h.chunk.path for h in engine.search(word, top_k=5, score_threshold=0.0).hits}


def test_chunks_are_embedded_while_later_files_are_still_read(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes(data)
    embedder = FakeEmbedder()
    # The last file is read only once a step has embedded chunks: a pass that read every
    # file before embedding any would wait here until the deadline and fail.
    hold_last_read(monkeypatch, lambda: embedder.embedded >= EMBED_BATCH)
    engine = Engine(make_settings(data), lambda: embedder)
    engine.load_model()
    seen: list[Progress] = []
    try:
        report = engine.reindex(progress=seen.append)
    finally:
        engine.stop()
    assert report.files_added == FILES and report.chunks_embedded == FILES
    assert vector_ids(data / "index") == chunk_keys(data / "index")
    assert any(p.phase == "reading" and p.embedded > 0 for p in seen)
    last = seen[-1]
    assert (last.phase, last.done, last.total) == ("embedding", FILES, FILES)


def test_keyword_search_sees_each_file_while_embedding_is_held(data: Path) -> None:
    write_notes(data)
    embedder = GatedEmbedder()
    embedder.gate.clear()
    engine = Engine(make_settings(data), lambda: embedder)
    engine.start()
    try:
        eventually(embedder.held.is_set)  # a step of embedding waits for the gate
        eventually(lambda: found(engine, f"marker{FILES - 1}") == {LAST})
        state = engine.state()
        assert state.indexing and state.chunks_with_vectors == 0
        embedder.gate.set()
        eventually(lambda: not engine.state().indexing)
    finally:
        embedder.gate.set()
        engine.stop()
    assert vector_ids(data / "index") == chunk_keys(data / "index")
    assert len(chunk_ids(data / "index")) == FILES


def test_a_stop_while_both_run_leaves_a_consistent_index_the_next_pass_completes(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes(data)
    embedder = GatedEmbedder()
    embedder.gate.clear()
    hold_last_read(monkeypatch, embedder.held.is_set)  # reading is not over yet
    engine = Engine(make_settings(data), lambda: embedder)
    engine.start()
    eventually(embedder.held.is_set)
    engine.stop(timeout=0)  # both threads are inside a step
    embedder.gate.set()
    engine.stop()
    assert not engine.state().indexing
    assert 0 < embedder.embedded <= EMBED_BATCH  # the step under way ended, no other began
    saved = VectorStore.load(data / "index" / "faiss.index", 64)
    assert len(saved) == embedder.embedded
    assert set(saved.ids().tolist()) <= chunk_keys(data / "index")
    rows = catalog_rows(data / "index")
    assert all(texts == [NOTES[path]] for path, texts in rows.items())

    monkeypatch.undo()
    again = Engine(make_settings(data), FakeEmbedder)
    again.load_model()
    try:
        report = again.reindex()
    finally:
        again.stop()
    assert report.files_added == FILES - len(rows)
    assert len(catalog_rows(data / "index")) == FILES
    assert vector_ids(data / "index") == chunk_keys(data / "index")


def test_files_read_while_the_model_loads_are_searchable_then_embedded(data: Path) -> None:
    write_notes(data)
    release = threading.Event()

    def slow_load() -> FakeEmbedder:
        release.wait(60)
        return FakeEmbedder()

    engine = Engine(make_settings(data, model_wait_s=0.0), slow_load)
    engine.start()
    try:
        eventually(lambda: found(engine, f"marker{FILES - 1}") == {LAST})
        assert engine.state().chunks_with_vectors == 0
        release.set()
        eventually(lambda: not engine.state().indexing)
        assert engine.state().chunks_with_vectors == FILES
    finally:
        release.set()
        engine.stop()
    assert vector_ids(data / "index") == chunk_keys(data / "index")


class TokenCountingEmbedder(FakeEmbedder):
    """Counts a text's tokens against its length in characters (the longer, the fewer),
    and keeps each step's texts, so a test sees which of the two ordered the steps."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[list[str]] = []

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return [tokens(t) for t in texts]

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.steps.append(list(texts))
        return super().embed_documents(texts)


def tokens(text: str) -> int:
    return 1_000 - len(text)


def test_steps_group_chunks_by_the_embedders_token_counts(data: Path) -> None:
    for i in range(FILES):
        write(data / f"note{i:03d}.txt", f"Note {i} marker{i} " + "word " * ((i * 7) % FILES))
    release = threading.Event()
    embedder = TokenCountingEmbedder()

    def load_once_read() -> FakeEmbedder:
        release.wait(60)  # every chunk is stored before the first window is taken
        return embedder

    engine = Engine(make_settings(data, model_wait_s=0.0), load_once_read)
    engine.start()
    try:
        eventually(lambda: engine.state().chunks_total == FILES)
        release.set()
        eventually(lambda: not engine.state().indexing)
    finally:
        release.set()
        engine.stop()
    steps = [[tokens(t) for t in step] for step in embedder.steps]
    assert sum(map(len, steps)) == FILES and len(steps) > 2
    for step, later in itertools.pairwise(steps[1:]):  # the first window is one step
        assert min(step) >= max(later)  # the most tokens first, no step straddling another


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities: Linux")
def test_reading_runs_below_the_encoder_when_asked(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notes(data)
    real = IsolatedReader.read
    seen: list[int] = []

    def read(self: IsolatedReader, path: Path, *, max_bytes: int) -> Document:
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return real(self, path, max_bytes=max_bytes)

    monkeypatch.setattr(IsolatedReader, "read", read)
    engine = Engine(make_settings(data), FakeEmbedder, steps=Steps(reading_nice=3))
    engine.load_model()
    try:
        engine.reindex()
    finally:
        engine.stop()
    ours = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert len(seen) == FILES and set(seen) == {min(ours + 3, 19)}


def test_the_last_file_read_is_told_even_when_embedding_begins_before_the_pass_looks() -> None:
    from micro_rag_mcp.local.passes.tally import Tally

    told: list[Progress] = []
    tally = Tally(told.append, threading.Event())
    tally.read(Progress("reading", 1, 3, "a.txt"))
    tally.publish()
    tally.read(Progress("reading", 2, 3, "b.txt"))
    tally.read(Progress("reading", 3, 3, "c.txt"))  # the reading thread ends here,
    tally.to_embed = 3  # and the embedding begins, before the pass's thread looks again
    tally.publish()
    tally.publish()
    assert [(p.phase, p.done) for p in told] == [
        ("reading", 1),
        ("reading", 3),
        ("embedding", 0),
        ("embedding", 0),
    ]
