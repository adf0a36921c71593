"""What a service's sessions share: one engine per index, one model per precision."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ConfigError
from micro_rag_mcp.core.settings import ModelName, Settings
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.service.indexes import Indexes, SessionInfo, SharedModels
from micro_rag_mcp.store import Store, open_store
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings
from tests.waiting import eventually


class Recorded:
    """Indexes over real engines (fake model) that note every engine and model made."""

    def __init__(self) -> None:
        self.engines: list[Store] = []
        self.models: list[str] = []
        self.indexes = Indexes(self._open, SharedModels(self._load), linger_s=0)

    def _open(self, settings: Settings, load: object) -> Store:
        store = open_store(settings, load)  # type: ignore[arg-type]
        self.engines.append(store)
        return store

    def _load(self, settings: Settings, encoder: ModelName) -> Embedder:
        self.models.append(f"{encoder}/{settings.model_precision}")
        return FakeEmbedder(model_id=f"{encoder}-fake")


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    made = Recorded()
    yield made
    made.indexes.stop_all()


def session(title: str) -> SessionInfo:
    return SessionInfo(title, os.getpid())


def folder(tmp_path: Path, name: str) -> Path:
    data = tmp_path / name
    data.mkdir()
    (data / "notes.md").write_text(f"# {name}\n\nThe {name} notes mention a heron.\n")
    return data


def test_sessions_on_one_folder_share_one_engine(tmp_path: Path, recorded: Recorded) -> None:
    settings = make_settings(folder(tmp_path, "alpha"))
    first = recorded.indexes.attach(settings, session("A"))
    second = recorded.indexes.attach(settings, session("B"))
    assert len(recorded.engines) == 1 and first.jobs is second.jobs
    first.start()
    second.start()
    report = first.reindex()  # after the start-up pass, which it waits for
    assert report.files_added + report.files_unchanged == 1
    assert second.search("heron", score_threshold=0.0).hits
    titles = [s.title for s in recorded.indexes.sessions(settings.index_folder)]
    assert titles == ["A", "B"]
    first.stop()
    assert [s.title for s in recorded.indexes.sessions(settings.index_folder)] == ["B"]
    assert second.search("heron", score_threshold=0.0).hits  # the engine still serves B
    second.stop()  # returns at once; the engine stops in the background
    eventually(lambda: recorded.indexes.count == 0, "the last session took the engine with it")


@pytest.mark.slow  # over a second: kept out of the fast lane
def test_folders_share_one_model_per_encoder_and_precision(
    tmp_path: Path, recorded: Recorded
) -> None:
    kinds = (
        ("a", {"model": "minilm"}),
        ("b", {"model": "minilm"}),
        ("c", {"model": "minilm", "model_precision": "int8"}),
        ("d", {"model": "e5-small"}),
        ("e", {"model": "e5-small", "model_precision": "int8"}),
        ("f", {"model": "e5-small", "model_precision": "int8"}),
    )
    handles = [
        recorded.indexes.attach(make_settings(folder(tmp_path, name), **extra), session(name))
        for name, extra in kinds
    ]
    for handle in handles:
        handle.start()
        handle.load_model()
    assert len(recorded.engines) == 6
    assert sorted(recorded.models) == [
        "e5-small/fp32",
        "e5-small/int8",
        "minilm/fp32",
        "minilm/int8",
    ]
    # Each engine embeds with the encoder it asked for, not the first one loaded.
    for handle in handles:
        handle.reindex()
    spaces = [h.status().vector_model for h in handles]
    assert [s.split(";")[0] if s else s for s in spaces] == [
        "minilm-fake",
        "minilm-fake",
        "minilm-fake",
        "e5-small-fake",
        "e5-small-fake",
        "e5-small-fake",
    ]


@pytest.mark.parametrize(
    ("other", "flag"),
    [
        ({"chunk_size": 500}, "--chunk-size: 1000, not 500"),
        ({"model_precision": "int8"}, "--model-precision: fp32, not int8"),
        ({"model": "e5-small"}, "--model: auto, not e5-small"),
        ({"exts": (".md",)}, "--exts"),
        ({"exclude": ("drafts/",)}, "--exclude: none, not drafts/"),
    ],
)
def test_other_settings_on_a_shared_index_are_refused_in_one_sentence(
    tmp_path: Path, recorded: Recorded, other: dict[str, object], flag: str
) -> None:
    data = folder(tmp_path, "alpha")
    recorded.indexes.attach(make_settings(data), session("A"))
    with pytest.raises(ConfigError) as refused:
        recorded.indexes.attach(make_settings(data, **other), session("B"))
    sentence = str(refused.value)
    assert flag in sentence and str(data / "index") in sentence and "\n" not in sentence
    assert [s.title for s in recorded.indexes.sessions(data / "index")] == ["A"]


def test_an_engine_no_session_uses_steps_aside_for_other_settings(
    tmp_path: Path, recorded: Recorded
) -> None:
    """Lingering after its last session, an engine would otherwise refuse a launch with
    other settings, and its watcher build the index back to its own at the next change."""
    recorded.indexes.linger_s = 3600  # it lingers for the whole test
    data = folder(tmp_path, "alpha")
    first = recorded.indexes.attach(make_settings(data), session("A"))
    first.start()
    first.load_model()
    first.reindex()
    first.stop()
    assert recorded.indexes.sessions(data / "index") == []
    second = recorded.indexes.attach(make_settings(data, model="e5-small"), session("B"))
    second.start()
    second.load_model()
    second.reindex()
    assert len(recorded.engines) == 2
    space = second.status().vector_model
    assert space is not None and space.startswith("e5-small-fake")
    # the engine that stepped aside stopped, and gave its model back
    eventually(
        lambda: recorded.indexes.models.keys == [("e5-small", "fp32")],
        "the engine that stepped aside stopped",
    )
    # while B uses it, other settings are refused as before
    with pytest.raises(ConfigError, match="--model: e5-small, not auto"):
        recorded.indexes.attach(make_settings(data), session("C"))
    second.stop()
