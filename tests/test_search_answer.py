"""A search's answer: readable text beside the structured fields, kept within max_chars."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from micro_rag_mcp.serve.search_answer import DEFAULT_MAX_CHARS, answer_chars
from tests.mcpkit import run_client


@pytest.fixture
def long_passages(data: Path) -> Path:
    """60 files of four passages of ~900 characters, each about herons."""
    for i in range(60):
        paragraphs = [
            f"Heron survey {i}.{p}: the grey herons nested by the reeds again this spring. " * 12
            for p in range(4)
        ]
        (data / f"survey{i:02d}.txt").write_text("\n\n".join(paragraphs))
    return data


def search(data: Path, **arguments: Any) -> Any:
    async def check(client: Client) -> Any:
        args = {"query": "herons nested", "score_threshold": 0, **arguments}
        return await client.call_tool("search", args)

    return run_client(check, data)


def test_top_k_50_fits_the_default_budget_and_says_how_to_get_the_rest(
    long_passages: Path,
) -> None:
    result = search(long_passages, top_k=50)
    out = result.structured_content
    assert answer_chars(result) <= DEFAULT_MAX_CHARS
    assert len(out["results"]) == 50  # snippets cut, no result left out
    assert out["cut"]["snippet_chars"] < 900 and out["cut"]["results_left_out"] == 0
    assert all(hit["snippet_cut"] for hit in out["results"])
    assert any(
        "call read with a result's path, char_start and char_end" in n for n in out["notices"]
    )

    async def read_first(client: Client) -> Any:
        hit = out["results"][0]
        args = {"path": hit["path"], "char_start": hit["char_start"], "char_end": hit["char_end"]}
        return (await client.call_tool("read", args)).structured_content

    whole = run_client(read_first, long_passages)["text"]
    assert whole.startswith(out["results"][0]["snippet"].removesuffix("…"))
    assert len(whole) > len(out["results"][0]["snippet"])


def test_max_chars_sets_the_budget_and_results_are_left_out_below_it(long_passages: Path) -> None:
    result = search(long_passages, top_k=50, max_chars=6_000)
    out = result.structured_content
    assert answer_chars(result) <= 6_000
    assert 0 < len(out["results"]) < 50
    assert out["cut"]["results_left_out"] == 50 - len(out["results"])
    assert out["cut"]["max_chars"] == 6_000
    refused = search(long_passages, max_chars=10)
    assert refused.is_error
    assert "max_chars must be between 2000 and 500000 (got 10)" in refused.content[0].text


def test_the_text_is_the_answer_for_reading_with_each_passage_once(long_passages: Path) -> None:
    result = search(long_passages, top_k=5)
    out = result.structured_content
    text = result.content[0].text
    assert out["cut"] is None and not any(hit["snippet_cut"] for hit in out["results"])
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # not the structured content a second time
    for hit in out["results"]:
        assert text.count(hit["snippet"]) == 1
        assert f"[{hit['rank']}] {hit['path']}" in text
        assert f"chars {hit['char_start']}-{hit['char_end']}" in text and hit["anchor"] in text
