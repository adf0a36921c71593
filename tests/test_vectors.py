"""The vector store's saved file: mapped read-only for searches, copied for the writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.vectors.cache import VectorCache, reader_meta
from micro_rag_mcp.local.vectors.store import VectorStore
from tests.fakes import FakeEmbedder
from tests.indexkit import write


def _unit_rows(n: int, dimension: int = 64) -> np.ndarray:
    rows = np.random.default_rng(3).standard_normal((n, dimension)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_mapped_store_finds_what_was_saved_and_refuses_changes(tmp_path: Path) -> None:
    path = tmp_path / "faiss.index"
    rows = _unit_rows(50)
    saved = VectorStore(path, 64)
    saved.add(list(range(100, 150)), rows)
    saved.save()
    before = path.read_bytes()
    mapped = VectorStore.load(path, 64, mapped=True)
    assert mapped.mapped and len(mapped) == 50
    assert mapped.search(rows[7], 3) == saved.search(rows[7], 3)
    assert mapped.similarity(rows[7], [107]) == pytest.approx({107: 1.0}, abs=1e-5)
    with pytest.raises(RuntimeError, match="read-only"):
        mapped.add([1], rows[:1])
    with pytest.raises(RuntimeError, match="read-only"):
        mapped.remove([100])
    assert path.read_bytes() == before and len(mapped) == 50


def test_searches_map_the_file_and_the_writer_gets_a_copy_it_can_change(
    engine: Engine, data: Path
) -> None:
    write(data / "a.txt", "Apples and pears.", mtime=1e6)
    engine.reindex()
    cache = VectorCache(engine.paths)  # a process that did not write the file
    embedder = FakeEmbedder()
    catalog = Catalog.open_reader(engine.paths.catalog)
    try:
        reader = cache.for_catalog(reader_meta(catalog), embedder, writing=False)
        assert reader is not None and reader.mapped and len(reader) == 1
        writer = cache.for_writer(catalog, embedder)
    finally:
        catalog.close()
    assert not writer.mapped and len(writer) == 1
    writer.add([999], _unit_rows(1))
    assert len(writer) == 2 and len(reader) == 1
