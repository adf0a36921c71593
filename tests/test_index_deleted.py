"""The index folder deleted under a running server: the next search says so, and the
index is rebuilt from the folder without anyone calling ``reindex``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import MicroRagError, NotIndexed
from micro_rag_mcp.local.engine import Engine
from tests.fakes import FakeEmbedder
from tests.indexkit import write
from tests.settingskit import make_settings
from tests.waiting import eventually


def paths_found(engine: Engine, word: str) -> set[str]:
    return {h.chunk.path for h in engine.search(word, score_threshold=0.0).hits}


@pytest.mark.parametrize("watch", ["off", pytest.param("auto", marks=pytest.mark.slow)])
def test_a_search_after_the_index_is_deleted_says_so_and_the_index_is_rebuilt(
    data: Path, watch: str
) -> None:
    write(data / "heron.md", "a note about the grey heron")
    engine = Engine(make_settings(data, watch=watch), FakeEmbedder)
    engine.start()
    try:
        eventually(lambda: paths_found(engine, "heron") == {"heron.md"}, "the note indexed")
        eventually(lambda: not engine.state().indexing, "the start-up pass ended")
        shutil.rmtree(data / "index")
        outcome = engine.search("heron", score_threshold=0.0)
        assert outcome.hits == []
        assert any("was deleted while the server ran" in n for n in outcome.notices), outcome
        assert not any(n.startswith("nothing is indexed yet") for n in outcome.notices)
        eventually(lambda: paths_found(engine, "heron") == {"heron.md"}, "the index rebuilt")
        assert engine.status().files_indexed == 1
    finally:
        engine.stop()


def read_text(engine: Engine, path: str) -> str | None:
    """The file's indexed text, or None while it cannot be read (being rebuilt)."""
    try:
        return engine.read(path).text
    except MicroRagError:
        return None


def test_a_read_after_the_index_is_deleted_says_so_and_the_index_is_rebuilt(data: Path) -> None:
    write(data / "heron.md", "a note about the grey heron")
    engine = Engine(make_settings(data), FakeEmbedder)
    try:
        engine.reindex()
        shutil.rmtree(data / "index")
        with pytest.raises(NotIndexed, match="was deleted while the server ran"):
            engine.read("heron.md")
        eventually(lambda: read_text(engine, "heron.md") == "a note about the grey heron")
    finally:
        engine.stop()


def test_a_search_before_the_first_pass_still_says_nothing_is_indexed_yet(data: Path) -> None:
    write(data / "heron.md", "a note about the grey heron")
    engine = Engine(make_settings(data), FakeEmbedder)
    try:
        outcome = engine.search("heron", score_threshold=0.0)
        assert outcome.notices[-1] == "nothing is indexed yet"
        assert not (data / "index").exists()  # a search does not start an index itself
    finally:
        engine.stop()
