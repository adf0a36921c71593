"""How an index was built is recorded as text and read back as the values that wrote it."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_settings


def test_the_recorded_identity_reads_back_as_the_values_that_wrote_it(data: Path) -> None:
    from micro_rag_mcp.core.settings import recorded_chunking
    from micro_rag_mcp.model.embedder import INT8_SUFFIX, MODEL_ID
    from micro_rag_mcp.model.handle import recorded_precision
    from micro_rag_mcp.text.vector_text import VECTOR_RECIPE

    settings = make_settings(data, chunk_size=640, chunk_overlap=64)
    assert recorded_chunking(settings.chunking_id) == (640, 64)
    assert recorded_chunking("") is None and recorded_chunking("chars:x/1") is None
    assert recorded_precision(f"{MODEL_ID}{INT8_SUFFIX};{VECTOR_RECIPE}") == "int8"
    assert recorded_precision(f"{MODEL_ID};{VECTOR_RECIPE}") == "fp32"
    assert recorded_precision("") == "fp32"


def test_the_chunking_record_is_written_as_every_index_holds_it_and_read_back() -> None:
    from micro_rag_mcp.core.settings import Chunking

    assert Chunking(640, 64).recorded == "chars:640/64;titles:3"  # as indexes hold it
    assert Chunking.from_record("chars:640/64;titles:3") == Chunking(640, 64)
    # Made before headings joined their passages: another chunking, so every file is re-chunked.
    assert Chunking.from_record("chars:640/64;titles:2") == Chunking(640, 64, titles=2)
    assert Chunking.from_record("chars:1000/200") == Chunking(1000, 200, titles=0)
    assert Chunking.from_record("chars:x/1") is None and Chunking.from_record("") is None
