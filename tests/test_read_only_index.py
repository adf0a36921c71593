"""An index on a read-only file system is searched as it is, and search says that the
folder's changes are not being indexed, and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from micro_rag_mcp.local.engine import Engine
from tests.diskkit import remount_read_only, small_filesystem
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings
from tests.waiting import eventually

pytestmark = pytest.mark.slow  # the real watcher


def test_search_on_a_read_only_index_says_changes_are_not_indexed(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    (data / "keeper.txt").write_text("The lighthouse keeper logs every passing ship.")
    with small_filesystem(tmp_path / "index", "16m") as index:
        built = Engine(make_settings(data, index_folder=index), FakeEmbedder)
        built.load_model()
        built.reindex()
        built.stop()
        remount_read_only(index)
        (data / "new.txt").write_text("Quinces ripen late in autumn.")
        eng = Engine(make_settings(data, index_folder=index, watch="auto"), FakeEmbedder)
        eng.load_model()
        eng.start()
        try:
            eventually(lambda: eng.state().write_fault is not None, "the start-up pass fails")
            outcome = eng.search("lighthouse keeper")
        finally:
            eng.stop()
    assert [h.chunk.path for h in outcome.hits][:1] == ["keeper.txt"]
    (said,) = [n for n in outcome.notices if "not being indexed" in n]
    assert said.startswith("changes of the folder are not being indexed: ")
    assert "Read-only file system" in said
