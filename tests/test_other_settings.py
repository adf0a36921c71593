"""Two writers of one index with other settings (another encoder, other file types) do
not undo each other's work at every change: the one that wrote last keeps the index, and
the other says it leaves the index alone until it is restarted."""

from __future__ import annotations

from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import OtherSettings
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.local.engine import Engine
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings


def started(settings: Settings, model_id: str, request: pytest.FixtureRequest) -> Engine:
    engine = Engine(settings, lambda: FakeEmbedder(model_id=model_id))
    request.addfinalizer(engine.stop)
    engine.load_model()
    return engine


def test_a_writer_whose_index_another_re_embedded_leaves_it_to_that_one(
    data: Path, request: pytest.FixtureRequest
) -> None:
    (data / "ships.txt").write_text("The lighthouse keeper logs every passing ship.")
    (data / "bees.txt").write_text("Bees carry pollen between the orchard's trees.")
    first = started(make_settings(data), "encoder-one", request)
    assert first.reindex().chunks_embedded == 2
    second = started(make_settings(data), "encoder-two", request)  # another process
    assert second.reindex().chunks_embedded == 2  # it came last: it re-embeds, once
    (data / "new.txt").write_text("Quinces ripen late in autumn.")
    with pytest.raises(OtherSettings, match=r"vector_model \(was encoder-one.*now encoder-two"):
        first.reindex()
    fault = first.state().write_fault
    assert fault is not None and "restart this server" in fault
    said = [n for n in first.search("lighthouse keeper").notices if "not being indexed" in n]
    assert said and "another process re-made this index" in said[0]
    # The index stays the second's: its next pass embeds only what is new.
    report = second.reindex()
    assert report.chunks_embedded == 1 and report.files_added == 1
    assert second.search("quinces autumn").hits[0].chunk.path == "new.txt"
    # A restart takes it back, and then the second one leaves it.
    again = started(make_settings(data), "encoder-one", request)
    assert again.reindex().chunks_embedded == 3
    with pytest.raises(OtherSettings):
        second.reindex()


def test_other_file_types_are_other_settings_too(
    data: Path, request: pytest.FixtureRequest
) -> None:
    (data / "a.txt").write_text("Plain notes about tides.")
    (data / "b.md").write_text("# Tides\n\nMarkdown notes about tides.")
    both = started(make_settings(data, exts=(".txt", ".md")), "encoder-one", request)
    assert both.reindex().files_added == 2
    text_only = started(make_settings(data, exts=(".txt",)), "encoder-one", request)
    text_only.reindex()
    with pytest.raises(OtherSettings, match="scope"):
        both.reindex()
    assert [h.chunk.path for h in text_only.search("notes about tides").hits] == ["a.txt"]


def test_a_writer_that_wrote_last_goes_on_writing(
    data: Path, request: pytest.FixtureRequest
) -> None:
    (data / "a.txt").write_text("Plain notes about tides.")
    one = started(make_settings(data), "encoder-one", request)
    one.reindex()
    same = started(make_settings(data), "encoder-one", request)  # the same settings
    same.reindex()
    (data / "b.txt").write_text("More notes about the moon.")
    assert one.reindex().files_added == 1  # nothing re-made: no reason to stand aside
    assert same.reindex().files_unchanged == 2
