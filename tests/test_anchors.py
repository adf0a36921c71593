"""Anchors: a hit's passage found again after edits elsewhere, an edit in it, a reindex."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from micro_rag_mcp.core.errors import InvalidArgument, PassageGone
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.serve.tool_results import search_result
from micro_rag_mcp.text.anchors import SIMILAR, locate, make_anchor, parse_anchor
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings


def paragraph(i: int) -> str:
    return " ".join(f"Clause {i}.{k} binds party{i * 7 + k} to term{k * 3 + i}." for k in range(8))


def document(ids: list[int]) -> str:
    return "\n\n".join(paragraph(i) for i in ids) + "\n"


def _hit(engine: Engine, query: str) -> tuple[str, str, int, int]:
    hit = engine.search(query, 1, 0.0).hits[0].chunk
    return hit.path, hit.text, hit.char_start, hit.char_end


def test_an_anchor_finds_its_passage_after_edits_above_and_below(
    engine: Engine, data: Path
) -> None:
    (data / "contract.txt").write_text(document(list(range(30))))
    engine.reindex()
    path, text, start, _ = _hit(engine, "party103 term45")
    anchor = make_anchor(text, start)
    (data / "contract.txt").write_text(document([100, 101, *range(3, 30), 102]))
    engine.reindex()
    passage = engine.read(path, anchor=anchor)
    assert passage.text == text and passage.changed is False and passage.similarity == 1.0
    assert passage.char_start != start


def test_an_edited_passage_is_the_closest_one_and_says_it_changed(
    engine: Engine, data: Path
) -> None:
    (data / "c.txt").write_text(document(list(range(30))))
    engine.reindex()
    path, text, start, _ = _hit(engine, "party103 term45")
    anchor = make_anchor(text, start)
    words = text.split(" ")
    edited = " ".join([*words[:10], "amended", "wording", *words[12:]])
    (data / "c.txt").write_text(document(list(range(30))).replace(text, edited))
    engine.reindex()
    passage = engine.read(path, anchor=anchor)
    assert passage.changed is True and SIMILAR <= passage.similarity <= 1  # type: ignore[operator]
    assert "amended wording" in passage.text


def test_a_deleted_passage_is_reported_gone(engine: Engine, data: Path) -> None:
    (data / "c.txt").write_text(document(list(range(30))))
    engine.reindex()
    path, text, start, end = _hit(engine, "party103 term45")
    anchor = make_anchor(text, start)
    body = (data / "c.txt").read_text()
    (data / "c.txt").write_text(body[:start] + body[end:])
    engine.reindex()
    with pytest.raises(PassageGone, match="no longer in c.txt"):
        engine.read(path, anchor=anchor)


def test_anchors_survive_rechunking(data: Path) -> None:
    (data / "c.txt").write_text(document(list(range(40))))
    first = Engine(make_settings(data, chunk_size=1000, chunk_overlap=200), FakeEmbedder)
    first.load_model()
    first.reindex()
    path, text, start, _ = _hit(first, "party103 term45")
    first.stop()
    anchor = make_anchor(text, start)
    second = Engine(make_settings(data, chunk_size=400, chunk_overlap=50), FakeEmbedder)
    second.load_model()
    try:
        second.reindex(force=True)
        passage = second.read(path, anchor=anchor, max_chars=50_000)
    finally:
        second.stop()
    assert passage.text == text and passage.changed is False


def test_a_bad_anchor_or_a_mix_with_offsets_is_one_sentence(engine: Engine, data: Path) -> None:
    (data / "c.txt").write_text(document([1, 2]))
    engine.reindex()
    with pytest.raises(InvalidArgument, match="not an anchor from search"):
        engine.read("c.txt", anchor="not-an-anchor")
    good = make_anchor(paragraph(1), 0)
    with pytest.raises(InvalidArgument, match="replaces char_start"):
        engine.read("c.txt", anchor=good, char_start=0)


@settings(max_examples=40, deadline=None)
@given(
    before=st.lists(st.integers(0, 400), max_size=6),
    after=st.lists(st.integers(0, 400), max_size=6),
    target=st.integers(500, 520),
)
def test_an_unchanged_passage_is_found_at_its_new_offsets(
    before: list[int], after: list[int], target: int
) -> None:
    passage = paragraph(target)
    old = document([1, 2]) + passage + "\n" + document([3])
    anchor = parse_anchor(make_anchor(passage, old.index(passage)))
    new = document(before) + passage + "\n" + document(after)
    found = locate(new, anchor)
    assert found is not None and not found.changed
    assert new[found.char_start : found.char_end] == passage
    assert locate(document(before + after), anchor) is None


def test_a_deleted_passage_is_gone_even_beside_a_near_copy(engine: Engine, data: Path) -> None:
    original = paragraph(7)
    near_copy = original.replace("party49", "party50")
    body = document(list(range(20))).replace(original, original + "\n\n" + document([40, 41]))
    body += "\n" + near_copy + "\n" + document(list(range(60, 70)))
    (data / "c.txt").write_text(body)
    engine.reindex()
    hit = search_result(engine.search("party49 term21", 1, 0.0)).results[0]
    assert "party49" in hit.snippet
    (data / "c.txt").write_text(body.replace(hit.snippet, "", 1))
    engine.reindex()
    with pytest.raises(PassageGone):
        engine.read(hit.path, anchor=hit.anchor)
