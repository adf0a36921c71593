"""The approximate search graph: when it is used, that deletions stay exact, and recovery.

Real FAISS and real files; the size from which the graph is used is set small so a few
hundred vectors exercise it.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.layout import IndexPaths
from micro_rag_mcp.local.vectors.store import VectorStore
from tests.fakes import FakeEmbedder
from tests.indexkit import write
from tests.settingskit import make_settings

DIMENSION = 32
FROM = 200  # vectors from which the stores below use the graph


def unit_vectors(count: int, seed: int = 0) -> npt.NDArray[np.float32]:
    vectors = np.random.default_rng(seed).standard_normal((count, DIMENSION)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def store_at(folder: Path, approximate_from: int = FROM) -> VectorStore:
    paths = IndexPaths(folder)
    return VectorStore.load(
        paths.vectors, DIMENSION, graph_path=paths.graph, approximate_from=approximate_from
    )


def filled(folder: Path, count: int) -> tuple[VectorStore, npt.NDArray[np.float32]]:
    """A store of ``count`` vectors with ids 1..count, its graph built and saved."""
    store = store_at(folder)
    vectors = unit_vectors(count)
    store.add(list(range(1, count + 1)), vectors)
    store.refresh_graph()
    store.save()
    return store, vectors


def test_a_removed_vector_is_never_returned_before_or_after_reopening(tmp_path: Path) -> None:
    store, vectors = filled(tmp_path, 400)
    assert store.approximate
    gone = list(range(1, 400, 3))
    store.remove(gone)
    for i in gone[:20]:  # each removed vector is its own query's nearest neighbour
        assert not {cid for cid, _ in store.search(vectors[i - 1], 50)} & set(gone)
    store.save()
    reopened = store_at(tmp_path)
    assert reopened.approximate  # the graph on disk still holds them: they are filtered
    for i in gone[:20]:
        assert not {cid for cid, _ in reopened.search(vectors[i - 1], 50)} & set(gone)
    kept = 2
    assert reopened.search(vectors[kept - 1], 1)[0][0] == kept


def test_a_graph_saved_before_vectors_were_added_takes_them_in_on_load(tmp_path: Path) -> None:
    store, _ = filled(tmp_path, 400)
    graph = IndexPaths(tmp_path).graph
    before = graph.read_bytes()
    extra = unit_vectors(5, seed=1)
    store.add(list(range(1000, 1005)), extra)
    store.remove([1])
    store.save()
    graph.write_bytes(before)  # a kill after the vectors were saved, before the graph was
    reopened = store_at(tmp_path)
    assert reopened.approximate
    assert reopened.search(extra[2], 1)[0][0] == 1002
    assert 1 not in {cid for cid, _ in reopened.search(unit_vectors(1)[0], 50)}


def test_search_switches_to_the_graph_at_the_threshold_and_back(tmp_path: Path) -> None:
    paths = IndexPaths(tmp_path)
    store = store_at(tmp_path)
    vectors = unit_vectors(FROM + 50)
    store.add(list(range(1, FROM)), vectors[: FROM - 1])
    store.refresh_graph()
    store.save()
    assert not store.approximate and not paths.graph.exists()  # one below: exact, no file
    store.add([FROM], vectors[FROM - 1 : FROM])
    store.refresh_graph()
    store.save()
    assert store.approximate and paths.graph.exists()
    assert store_at(tmp_path).approximate
    assert not store_at(tmp_path, approximate_from=FROM + 1).approximate  # exact below it
    store.remove([1, 2])
    store.refresh_graph()
    store.save()
    assert not store.approximate and not paths.graph.exists()
    exact = VectorStore(paths.vectors, DIMENSION)  # no graph at all: what search was before
    exact.add(store.ids().tolist(), vectors[2:FROM])
    for q in vectors[:10]:
        assert store.search(q, 20) == exact.search(q, 20)


def test_an_unreadable_graph_is_rebuilt_by_the_writer(tmp_path: Path) -> None:
    store, vectors = filled(tmp_path, 300)
    graph = IndexPaths(tmp_path).graph
    graph.write_bytes(graph.read_bytes()[:1000])  # torn
    reader = store_at(tmp_path)
    assert not reader.approximate  # exact, not broken
    assert reader.search(vectors[7], 1)[0][0] == 8
    writer = store_at(tmp_path)
    assert writer.graph_due
    writer.refresh_graph()
    writer.save()
    assert store_at(tmp_path).approximate


@pytest.fixture
def small_graph_engine(data: Path) -> Engine:
    eng = Engine(make_settings(data), FakeEmbedder, approximate_from=20)
    eng.load_model()
    return eng


def test_a_deleted_file_never_comes_back_through_the_engine(
    small_graph_engine: Engine, data: Path
) -> None:
    for i in range(40):
        write(data / f"note{i:02d}.txt", f"Note {i} about walrus{i} and the harbour.", mtime=1e6)
    small_graph_engine.reindex()
    assert IndexPaths(data / "index").graph.exists()
    hits = small_graph_engine.search("walrus7 harbour", top_k=5, score_threshold=0.0).hits
    assert hits[0].chunk.path == "note07.txt"
    (data / "note07.txt").unlink()
    small_graph_engine.reindex()
    again = Engine(make_settings(data), FakeEmbedder, approximate_from=20)
    again.load_model()
    for engine in (small_graph_engine, again):
        hits = engine.search("walrus7 harbour", top_k=40, score_threshold=0.0).hits
        assert hits and "note07.txt" not in {h.chunk.path for h in hits}
    again.stop()
    small_graph_engine.stop()
    paths = IndexPaths(data / "index")
    saved = VectorStore.load(paths.vectors, 64, graph_path=paths.graph, approximate_from=20)
    assert saved.approximate  # what both engines searched came through the graph


def test_a_graph_built_later_is_saved_alone_and_seen_by_a_reader(tmp_path: Path) -> None:
    paths = IndexPaths(tmp_path)
    writer = store_at(tmp_path)
    writer.add(list(range(1, FROM + 1)), unit_vectors(FROM))
    writer.save()  # the vectors, before any graph was built
    reader = store_at(tmp_path, approximate_from=10 * FROM)
    assert not paths.graph.exists() and reader.is_saved_state(paths.vectors, paths.graph)
    vectors_file = (paths.vectors.stat().st_ino, paths.vectors.stat().st_mtime_ns)
    writer.refresh_graph()
    assert writer.dirty
    writer.save()
    assert paths.graph.exists() and not writer.dirty
    # The larger file is left as it was; a reader still knows its copy is out of date.
    assert (paths.vectors.stat().st_ino, paths.vectors.stat().st_mtime_ns) == vectors_file
    assert not reader.is_saved_state(paths.vectors, paths.graph)
    assert writer.is_saved_state(paths.vectors, paths.graph)
    assert store_at(tmp_path).approximate


class _StopAfter(threading.Event):
    """A stop that is set once it has been looked at ``looks`` times."""

    def __init__(self, looks: int) -> None:
        super().__init__()
        self.looks = looks

    def is_set(self) -> bool:
        self.looks -= 1
        return self.looks < 0


def test_a_stop_during_a_graph_build_ends_it_at_the_next_slice(tmp_path: Path) -> None:
    from micro_rag_mcp.local.vectors.graph import BUILD_SLICE

    store = store_at(tmp_path)
    vectors = unit_vectors(2 * BUILD_SLICE + 10)
    store.add(list(range(1, len(vectors) + 1)), vectors)
    stop = _StopAfter(looks=1)  # one slice goes in, then the stop is seen
    store.refresh_graph(stop)
    assert stop.looks == -1  # looked at before each of the first two slices, no more
    assert not store.approximate and store.graph_due  # no half graph: search stays exact
    assert store.search(vectors[7], 1)[0][0] == 8
    store.refresh_graph()  # the next pass builds it
    assert store.approximate and not store.graph_due
    assert store.search(vectors[7], 1)[0][0] == 8
