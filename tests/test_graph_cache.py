"""The model graph kept in the index folder: read back while its key matches, rebuilt
when it is damaged or from another key, and never a reason for a load to fail."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from micro_rag_mcp.core.errors import ModelUnavailable
from micro_rag_mcp.model.embedder import load_embedder
from micro_rag_mcp.model.files import MINILM, find_weights
from micro_rag_mcp.model.graph_cache import GRAPH_FILE, cached_graph, decode, encode, graph_key

pytestmark = pytest.mark.slow


class Builds:
    """A stand-in for the child process that builds the graph: counts its calls."""

    def __init__(self, graph: bytes = b"\x08\x07graph bytes\nwith a newline") -> None:
        self.graph = graph
        self.count = 0

    def __call__(self) -> bytes:
        self.count += 1
        return self.graph


def test_a_graph_built_once_is_read_back_for_the_same_key(tmp_path: Path) -> None:
    build = Builds()
    first = cached_graph(tmp_path, "key one", build)
    second = cached_graph(tmp_path, "key one", build)
    assert first == second == build.graph and build.count == 1
    assert (tmp_path / GRAPH_FILE).exists()


def test_a_graph_of_another_key_is_built_again_and_replaced(tmp_path: Path) -> None:
    old, new = Builds(b"old graph"), Builds(b"new graph")
    cached_graph(tmp_path, "weights a", old)
    assert cached_graph(tmp_path, "weights b", new) == b"new graph" and new.count == 1
    assert cached_graph(tmp_path, "weights b", new) == b"new graph" and new.count == 1


@pytest.mark.parametrize("damage", ["truncated", "flipped", "foreign", "empty"])
def test_a_damaged_graph_file_is_never_used_but_built_again(tmp_path: Path, damage: str) -> None:
    build = Builds()
    cached_graph(tmp_path, "k", build)
    path = tmp_path / GRAPH_FILE
    data = path.read_bytes()
    damaged = {
        "truncated": data[:-5],
        "flipped": data[:-1] + bytes([data[-1] ^ 1]),
        "foreign": b"\x08\x07some other onnx file",
        "empty": b"",
    }[damage]
    path.write_bytes(damaged)
    assert cached_graph(tmp_path, "k", build) == build.graph and build.count == 2
    assert decode(path.read_bytes()) == ("k", build.graph)


def test_a_folder_that_cannot_be_written_only_means_building_each_time(tmp_path: Path) -> None:
    missing = tmp_path / "not created"
    build = Builds()
    assert cached_graph(missing, "k", build) == build.graph
    assert cached_graph(missing, "k", build) == build.graph and build.count == 2
    assert not missing.exists()


def test_without_a_folder_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = Builds()
    monkeypatch.chdir(tmp_path)
    assert cached_graph(None, "k", build) == build.graph
    assert list(tmp_path.iterdir()) == []


def test_encode_and_decode_round_trip_any_bytes() -> None:
    graph = bytes(range(256)) * 3
    assert decode(encode("a key", graph)) == ("a key", graph)


def test_a_killed_save_leaves_an_old_temporary_that_a_later_save_removes(tmp_path: Path) -> None:
    left = tmp_path / f".{GRAPH_FILE}.abc123.tmp"
    left.write_bytes(b"half a graph")
    os.utime(left, (1e9, 1e9))  # long ago: no save in progress
    recent = tmp_path / f".{GRAPH_FILE}.def456.tmp"
    recent.write_bytes(b"another process's save in progress")
    cached_graph(tmp_path, "k", Builds())
    assert not left.exists() and recent.exists()


def test_the_real_model_loads_from_its_kept_graph_with_the_same_vectors(tmp_path: Path) -> None:
    from micro_rag_mcp.model.graphs import GRAPH_FORMAT

    built = load_embedder(threads=1, cache_dir=tmp_path)
    saved = tmp_path / GRAPH_FILE
    decoded = decode(saved.read_bytes())
    assert decoded is not None
    assert decoded[0] == graph_key(f"{MINILM.sha256}; format {GRAPH_FORMAT}")
    stamp = saved.stat().st_mtime_ns

    def no_build(encoder: str, path: Path) -> bytes:
        raise AssertionError("the graph was built again")

    again = load_embedder(threads=1, cache_dir=tmp_path, build_graph=no_build)
    assert saved.stat().st_mtime_ns == stamp  # read, not written again
    text = "Harbor cranes unload the cargo vessel."
    np.testing.assert_allclose(built.embed_query(text), again.embed_query(text), atol=1e-6)


def test_weights_that_fail_their_checksum_are_refused_even_with_a_kept_graph(
    tmp_path: Path,
) -> None:
    index = tmp_path / "index"
    index.mkdir()
    load_embedder(threads=1, cache_dir=index)  # keeps the graph of the pinned weights
    weights = bytearray(find_weights(MINILM).read_bytes())
    weights[len(weights) // 2] ^= 0xFF  # same length: it would parse
    damaged = tmp_path / "model.onnx"
    damaged.write_bytes(bytes(weights))
    with pytest.raises(ModelUnavailable, match="sha256"):
        load_embedder(threads=1, weights_file=damaged, cache_dir=index)
