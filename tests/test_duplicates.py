"""One passage, one result: a passage repeated elsewhere comes back once, at the rank of
the best place, naming the others; in both stores."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from rich.console import Console

from micro_rag_mcp.cli.output import Screens
from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.milvus.engine import MilvusEngine
from micro_rag_mcp.search.duplicates import phrases, place, repeats
from micro_rag_mcp.serve.tool_results import SearchResult
from tests.fakes import FakeEmbedder
from tests.mcpkit import run_client
from tests.milvuskit import MilvusServer, store_engine
from tests.passagekit import REPEATED, prose, write_handbook, write_notes
from tests.settingskit import make_settings

QUERY = "expense claims receipt reimbursed"


@pytest.fixture
def handbook(data: Path) -> Path:
    write_handbook(data)
    write_notes(data)
    return data


def holds_repeated(text: str) -> bool:
    return " ".join(REPEATED.split()[5:15]) in " ".join(text.split())


def check_repeated_once(engine: Engine | MilvusEngine) -> None:
    hits = engine.search(QUERY, 5, -1.0).hits
    assert len(hits) == 5
    holding = [h for h in hits if holds_repeated(h.chunk.text)]
    assert len(holding) == 1  # before: the handbook's chapters filled the top 5
    first = holding[0]
    # Six chapters and the policy hold it: the six others are named, the first five shown.
    assert first.repeats >= 6 and len(first.elsewhere) == 5
    assert len({(c.path, c.chunk_index) for c in first.elsewhere}) == 5
    assert {c.path for c in first.elsewhere} <= {"handbook.md", "expenses.md"}
    assert all(holds_repeated(c.text) for c in first.elsewhere)


def test_a_repeated_paragraph_comes_back_once_with_its_other_places(handbook: Path) -> None:
    engine = Engine(make_settings(handbook), FakeEmbedder)
    engine.load_model()
    try:
        engine.reindex()
        check_repeated_once(engine)
    finally:
        engine.stop()


@pytest.mark.slow
def test_a_repeated_paragraph_comes_back_once_from_a_milvus_store(
    handbook: Path, milvus: MilvusServer
) -> None:
    engine = store_engine(handbook, milvus.config())
    try:
        engine.reindex()
        check_repeated_once(engine)
    finally:
        engine.stop()


def test_the_tool_result_names_the_other_places(handbook: Path) -> None:
    async def check(client: Client) -> Any:
        result = await client.call_tool("search", {"query": QUERY})
        return result.structured_content, result.content[0].text  # type: ignore[union-attr]

    structured, text = run_client(check, handbook)
    repeated = [r["repeated"] for r in structured["results"] if r["repeated"]]
    assert len(repeated) == 1 and repeated[0]["count"] >= 6
    places = repeated[0]["places"]
    assert len(places) == 5
    assert all(p.split(" lines ")[0] in {"handbook.md", "expenses.md"} for p in places)
    # the text content, for clients that read only it, names the same places
    assert f"also in {repeated[0]['count']} other places: {places[0]}" in text


def test_a_place_is_named_by_locator_page_or_lines() -> None:
    base = StoredChunk(1, "a.md", ".md", 0, 0, 0, 9, 3, 5, None, "x", 9)
    assert place(base) == "a.md lines 3–5"
    pdf = StoredChunk(1, "b.pdf", ".pdf", 0, 0, 0, 9, None, None, 4, "x", 9)
    assert place(pdf) == "b.pdf page 4"
    deck = StoredChunk(1, "c.pptx", ".pptx", 0, 0, 0, 9, None, None, None, "x", 9, None, "slide 2")
    assert place(deck) == "c.pptx slide 2"


def test_copies_that_differ_in_case_spacing_and_punctuation_are_one_passage() -> None:
    text = " ".join(REPEATED.split()) + " " + "Badges are renewed every year at the desk."
    copy = text.upper().replace(",", "").replace(" ", "\n  ")
    assert repeats(phrases(text), phrases(copy))
    # The same paragraph among other text, cut at other places, is still one passage.
    shifted = "Parking is free for staff. " + REPEATED
    assert repeats(phrases(REPEATED + " Travel is booked centrally."), phrases(shifted))


def test_passages_that_only_share_their_form_are_not_one_passage() -> None:
    q2 = (
        "Revenue for the three months ended June 30, 2024 was $412 million, up 8 percent, "
        "driven by subscriptions; operating margin was 21 percent and cash was $1.2 billion."
    )
    q3 = (
        "Revenue for the three months ended September 30, 2024 was $436 million, up 6 "
        "percent, driven by services; operating margin was 19 percent and cash was $1.4 billion."
    )
    assert not repeats(phrases(q2), phrases(q3))
    assert not repeats(phrases("The pass ran at noon."), phrases("The pass ran at night."))
    narwhal, walrus = (f"A {a} was seen near the harbour mouth." for a in ("narwhal", "walrus"))
    assert not repeats(phrases(narwhal), phrases(walrus))  # half their phrases shared


def test_consecutive_chunks_of_a_file_are_never_folded_into_each_other(data: Path) -> None:
    # A short file chunked with a large overlap: consecutive chunks share most words.
    (data / "short.md").write_text(" ".join(f"word{i}" for i in range(150)) + "\n")
    engine = Engine(make_settings(data, chunk_size=400, chunk_overlap=190), FakeEmbedder)
    engine.load_model()
    try:
        engine.reindex()
        hits = engine.search("word70 word80", 5, -1.0).hits
    finally:
        engine.stop()
    assert len(hits) >= 2 and all(h.repeats == 0 for h in hits)


def test_a_paragraph_that_is_a_third_of_its_passage_does_not_fold_it() -> None:
    rng = random.Random(5)
    before, after = prose(rng, 4), prose(rng, 4)
    assert not repeats(phrases(f"{before} {REPEATED}"), phrases(f"{REPEATED} {after}"))
    assert repeats(phrases(f"Travel. {REPEATED}"), phrases(f"{REPEATED} Events."))


def test_the_command_line_names_the_other_places(handbook: Path) -> None:
    async def check(client: Client) -> Any:
        return (await client.call_tool("search", {"query": QUERY})).structured_content

    result = SearchResult.model_validate(run_client(check, handbook))
    out = io.StringIO()
    Screens(Console(file=out, width=200), Console(file=io.StringIO())).hits(result, QUERY)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("also in ")]
    assert len(lines) == 1 and lines[0].endswith(" more")
    assert lines[0].startswith("also in ") and "handbook.md lines " in lines[0]
