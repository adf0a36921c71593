"""The read tool through the SDK's in-process client, with the fake embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client

from tests.docfactory import make_pdf
from tests.mcpkit import run_client


def test_read_is_listed_read_only_with_bounded_arguments(data: Path) -> None:
    async def check(client: Client) -> Any:
        return {t.name: t for t in (await client.list_tools()).tools}["read"]

    tool = run_client(check, data)
    props = tool.input_schema["properties"]
    assert tool.input_schema["required"] == ["path"]
    assert tool.input_schema["additionalProperties"] is False
    assert (props["max_chars"]["minimum"], props["max_chars"]["maximum"]) == (1, 50000)
    assert props["max_chars"]["default"] == 8000
    assert {"char_start", "char_end", "page"} <= set(props)
    assert tool.annotations.read_only_hint is True
    assert "next_char_start" in tool.output_schema["properties"]


def test_read_a_pdf_page_then_a_text_range_and_continue_from_next(data: Path) -> None:
    make_pdf(data / "report.pdf", ["Cover page.", "The Hindenburg burned at Lakehurst in 1937."])
    (data / "notes.txt").write_text("".join(f"Line {i}.\n" for i in range(1, 101)))

    async def check(client: Client) -> list[Any]:
        hit = (await client.call_tool("search", {"query": "Hindenburg"})).structured_content
        top = hit["results"][0]  # type: ignore[index]
        page = await client.call_tool("read", {"path": top["path"], "page": top["page"]})
        first = await client.call_tool("read", {"path": "notes.txt", "max_chars": 30})
        start = first.structured_content["next_char_start"]  # type: ignore[index]
        second = await client.call_tool("read", {"path": "notes.txt", "char_start": start})
        again = await client.call_tool(
            "read",
            {"path": "report.pdf", "char_start": top["char_start"], "char_end": top["char_end"]},
        )
        return [top, page, first, second, again]

    top, page, first, second, again = run_client(check, data)
    out = page.structured_content
    assert out["text"] == "The Hindenburg burned at Lakehurst in 1937." and out["page"] == 2
    assert out["next_char_start"] is None and out["line_start"] is None
    assert again.structured_content["text"] == top["snippet"]  # offsets are search's
    one, two = first.structured_content, second.structured_content
    assert (one["char_start"], one["char_end"], one["next_char_start"]) == (0, 30, 30)
    assert (one["line_start"], one["line_end"]) == (1, 4)
    assert one["text"] + two["text"] == (data / "notes.txt").read_text().rstrip()
    assert two["next_char_start"] is None and two["total_chars"] == two["char_end"]


def test_read_refuses_unknown_and_outside_paths_in_one_sentence(data: Path) -> None:
    (data / "notes.txt").write_text("Some notes.")

    async def check(client: Client) -> list[Any]:
        return [
            await client.call_tool("read", {"path": "missing/report.pdf"}),
            await client.call_tool("read", {"path": "../etc/passwd"}),
            await client.call_tool("read", {"path": "notes.txt", "page": 1}),
            await client.call_tool("read", {"path": "notes.txt", "max_chars": 50001}),
            await client.call_tool("read", {"path": "notes.txt", "char_start": "3x"}),
        ]

    texts = [r.content[0].text for r in run_client(check, data) if r.is_error]
    assert texts == [
        'Error executing tool read: no file "missing/report.pdf" in the index; paths are '
        "relative to the data folder, as search returns them",
        'Error executing tool read: path "../etc/passwd" is outside the data folder; give a '
        "path relative to it, as search returns it",
        "Error executing tool read: page applies to PDF files only; notes.txt has no pages "
        "(use char_start and char_end)",
        "Error executing tool read: max_chars must be between 1 and 50000 (got 50001)",
        'Error executing tool read: char_start must be an integer or null (got "3x")',
    ]
