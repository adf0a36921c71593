from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from micro_rag_mcp.engine import Engine
from micro_rag_mcp.settings import Settings
from tests.fakes import FakeEmbedder


def make_settings(data: Path, **kw: object) -> Settings:
    return Settings(data_folder=data, index_folder=data / "index", **kw)  # type: ignore[arg-type]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    return folder


@pytest.fixture
def engine(data: Path) -> Iterator[Engine]:
    """An engine with the fake embedder, model loaded, no background start-up."""
    eng = Engine(make_settings(data), FakeEmbedder)
    eng.load_model()
    yield eng
    eng.stop()
