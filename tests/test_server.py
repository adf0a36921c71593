"""The MCP tools through the SDK's in-process client, with the fake embedder."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from micro_rag_mcp.core.fsutil import WriterLock
from micro_rag_mcp.core.settings import DOC_EXTS
from micro_rag_mcp.serve.server import build_server
from tests.fakes import FakeEmbedder, GatedEmbedder
from tests.indexkit import hold_lock
from tests.mcpkit import run_client
from tests.settingskit import make_settings
from tests.waiting import until


@pytest.mark.parametrize("shared", [False, True], ids=["alone", "shared"])
def test_tools_are_listed_with_bounds_output_schema_and_annotations(
    data: Path, shared: bool
) -> None:
    async def check(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"search", "reindex", "read"}
        props = tools["search"].input_schema["properties"]
        assert (props["top_k"]["minimum"], props["top_k"]["maximum"]) == (1, 50)
        assert props["top_k"]["default"] == 5
        assert (props["score_threshold"]["minimum"], props["score_threshold"]["maximum"]) == (0, 1)
        assert tools["search"].input_schema["required"] == ["query"]
        assert props["query"]["minLength"] == 1 and props["query"]["description"]
        for tool in tools.values():
            assert tool.input_schema["additionalProperties"] is False
        assert "results" in tools["search"].output_schema["properties"]  # type: ignore[index]
        assert tools["search"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert "files_failed" in tools["reindex"].output_schema["properties"]  # type: ignore[index]

    run_client(check, data, shared=shared)


def test_instructions_are_passed_verbatim(data: Path) -> None:
    inst = "Team Alpha\nRead-only  mode\n\tRefresh: 02:00"

    async def check(client: Client) -> str | None:
        return client.instructions

    assert run_client(check, data, instructions=inst) == inst


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 51}, "top_k"),
        ({"query": "x", "top_k": "many"}, "top_k"),
        ({"query": "x", "score_threshold": 1.5}, "score_threshold"),
        ({"query": "x", "score_threshold": -0.1}, "score_threshold"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({}, "query"),
    ],
)
def test_bad_search_arguments_get_an_error_naming_the_parameter(
    data: Path, args: dict[str, Any], needle: str
) -> None:
    async def check(client: Client) -> Any:
        return await client.call_tool("search", args)

    result = run_client(check, data)
    assert result.is_error
    assert needle in result.content[0].text


@pytest.mark.parametrize(
    ("tool", "args", "sentence"),
    [
        ("reindex", {"force": "yes"}, 'force must be a boolean (got "yes")'),
        ("reindex", {"force": 1}, "force must be a boolean (got 1)"),
        ("reindex", {"path_glob": 3}, "path_glob must be a string or null (got 3)"),
        ("search", {"query": "x", "top_k": "3rd"}, 'top_k must be an integer (got "3rd")'),
        ("search", {"query": "x", "top_k": True}, "top_k must be an integer (got true)"),
        ("search", {"query": "x", "top_k": 2.5}, "top_k must be an integer (got 2.5)"),
        ("search", {"query": "x", "top_k": 99}, "top_k must be between 1 and 50 (got 99)"),
        ("search", {"query": "x", "top_k": 0}, "top_k must be between 1 and 50 (got 0)"),
        (
            "search",
            {"query": "x", "score_threshold": "half"},
            'score_threshold must be a number (got "half")',
        ),
        (
            "search",
            {"query": "x", "score_threshold": 1.5},
            "score_threshold must be between 0 and 1 (got 1.5)",
        ),
        ("search", {"query": 7}, "query must be a string (got 7)"),
        ("search", {"query": ""}, 'query must contain some text (got "")'),
        ("search", {"query": "   "}, 'query must contain some text (got "   ")'),
        ("search", {"top_k": 3}, "query is required"),
        (
            "search",
            {"query": "x", "topk": 3},
            'unknown argument "topk"; the parameters are query, top_k, score_threshold, '
            "path_glob, modified_after, modified_before, file_types, max_chars",
        ),
        (
            "reindex",
            {"glob": "*.md", "dry_run": True},
            'unknown arguments "glob", "dry_run"; the parameters are force, path_glob',
        ),
    ],
)
def test_arguments_are_taken_exactly_as_the_schema_says_and_refused_in_one_sentence(
    data: Path, tool: str, args: dict[str, Any], sentence: str
) -> None:
    async def check(client: Client) -> Any:
        return await client.call_tool(tool, args)

    result = run_client(check, data)
    assert result.is_error
    assert result.content[0].text == f"Error executing tool {tool}: {sentence}"


def test_every_problem_with_the_arguments_is_one_line(data: Path) -> None:
    async def check(client: Client) -> Any:
        return await client.call_tool("search", {"query": "", "top_k": "nine", "k": 1})

    text = run_client(check, data).content[0].text
    assert text.splitlines() == [
        'Error executing tool search: query must contain some text (got "")',
        'top_k must be an integer (got "nine")',
        'unknown argument "k"; the parameters are query, top_k, score_threshold, '
        "path_glob, modified_after, modified_before, file_types, max_chars",
    ]


def test_numbers_follow_json_and_strings_stay_strings(data: Path) -> None:
    (data / "a.txt").write_text("alpha")

    async def check(client: Client) -> list[Any]:
        return [
            await client.call_tool("search", {"query": "alpha", "score_threshold": 0}),
            await client.call_tool("search", {"query": "alpha", "top_k": 3.0}),
            await client.call_tool("reindex", {"path_glob": "null", "force": True}),
            await client.call_tool("reindex", {"path_glob": "[1]", "force": False}),
        ]

    by_int, integral_float, null_glob, json_like_glob = run_client(check, data)
    assert [r["path"] for r in by_int.structured_content["results"]] == ["a.txt"]
    assert not integral_float.is_error, integral_float.content
    # A glob is a glob, even when it reads as JSON: "null" is not "no glob".
    assert null_glob.structured_content["files_updated"] == 0, null_glob.structured_content
    assert not json_like_glob.is_error, json_like_glob.content


def test_numbers_and_lists_sent_as_strings_are_taken_where_their_meaning_is_plain(
    data: Path,
) -> None:
    """What the MCP Inspector's CLI sends for a parameter whose schema has no plain type."""
    (data / "a.txt").write_text("alpha beta gamma")
    (data / "b.md").write_text("alpha in markdown")

    async def check(client: Client) -> list[Any]:
        search = {"query": "alpha", "score_threshold": "0", "top_k": "5"}
        return [
            await client.call_tool("search", {**search, "file_types": "txt"}),
            await client.call_tool("search", {**search, "file_types": "md, txt"}),
            await client.call_tool("search", {**search, "file_types": '["md"]'}),
            await client.call_tool(
                "read", {"path": "a.txt", "char_start": "6", "char_end": "10", "max_chars": "3"}
            ),
            await client.call_tool("read", {"path": "a.txt", "page": "one"}),
            await client.call_tool("search", {**search, "file_types": '["md"'}),
        ]

    txt, both, md, ranged, bad_page, bad_list = run_client(check, data)
    paths = [{r["path"] for r in x.structured_content["results"]} for x in (txt, both, md)]
    assert paths == [{"a.txt"}, {"a.txt", "b.md"}, {"b.md"}]
    assert ranged.structured_content["text"] == "bet"
    assert bad_page.content[0].text == (
        'Error executing tool read: page must be an integer or null (got "one")'
    )
    assert bad_list.is_error and "file_types must be a list of strings" in bad_list.content[0].text


@pytest.mark.parametrize("shared", [False, True], ids=["alone", "shared"])
def test_search_returns_cited_results_and_index_state(data: Path, shared: bool) -> None:
    (data / "zeppelin.md").write_text("# Airships\n\nThe Hindenburg burned at Lakehurst.\n")
    (data / "fruit.txt").write_text("Apples and pears.")

    async def check(client: Client) -> Any:
        return await client.call_tool("search", {"query": "Hindenburg", "score_threshold": 0.0})

    result = run_client(check, data, shared=shared)
    out = result.structured_content
    top = out["results"][0]
    assert top["path"] == "zeppelin.md" and top["ext"] == ".md"
    assert top["line_start"] == 1 and top["line_end"] == 3
    assert top["section"] == "Airships" and top["locator"] is None
    assert "Hindenburg" in top["snippet"]
    assert out["index"]["files_indexed"] == 2
    assert out["index"]["chunks_total"] == out["index"]["chunks_with_vectors"] == 2
    assert [r["rank"] for r in out["results"]] == list(range(1, len(out["results"]) + 1))
    relevance = [r["relevance"] for r in out["results"]]
    assert relevance == sorted(relevance, reverse=True) and 0 < relevance[0] <= 1


@pytest.mark.parametrize("shared", [False, True], ids=["alone", "shared"])
def test_reindex_reports_counts_failures_and_progress(data: Path, shared: bool) -> None:
    (data / "a.txt").write_text("alpha")
    updates: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        updates.append((done, total, message))

    async def check(client: Client) -> Any:
        (data / "b.txt").write_text("beta")
        (data / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
        return await client.call_tool("reindex", {}, progress_callback=progress)

    out = run_client(check, data, shared=shared).structured_content
    assert (out["files_added"], out["files_unchanged"]) == (1, 1)
    assert [f["path"] for f in out["files_failed"]] == ["broken.pdf"]
    assert out["chunks_total"] == 2
    assert updates, "no progress notification"
    values = [u[0] for u in updates]
    assert values == sorted(values)
    assert updates[-1][0] == updates[-1][1]


@pytest.mark.parametrize(
    ("glob", "notice"),
    [
        (
            "nomatch/**",
            f'path_glob "nomatch/**" matches no file of the {len(DOC_EXTS)} indexed types '
            "(--exts) in the data folder; nothing was read or removed",
        ),
        (
            "[unclosed",
            f'path_glob "[unclosed" matches no file of the {len(DOC_EXTS)} indexed types '
            '(--exts) in the data folder; nothing was read or removed (a "[" without a closing '
            '"]" matches itself)',
        ),
    ],
)
def test_a_glob_that_matches_no_file_says_so(data: Path, glob: str, notice: str) -> None:
    (data / "notes").mkdir()
    (data / "notes" / "a.txt").write_text("alpha")

    async def check(client: Client) -> list[Any]:
        return [
            await client.call_tool("reindex", {"path_glob": glob}),
            await client.call_tool("reindex", {"path_glob": "notes/**", "force": True}),
            await client.call_tool("reindex", {}),
        ]

    empty, matching, whole = (r.structured_content for r in run_client(check, data))
    assert empty["notices"] == [notice]
    counts = ["files_added", "files_updated", "files_removed", "files_unchanged"]
    assert [empty[c] for c in counts] == [0, 0, 0, 0] and empty["files_failed"] == []
    assert matching["files_updated"] == 1 and matching["notices"] == []
    assert whole["files_unchanged"] == 1 and whole["notices"] == []


def test_reindex_refuses_a_glob_leaving_the_folder(data: Path) -> None:
    async def check(client: Client) -> Any:
        return await client.call_tool("reindex", {"path_glob": "../*"})

    result = run_client(check, data)
    assert result.is_error and "leave the data folder" in result.content[0].text


def test_reindex_right_after_start_waits_for_the_start_up_pass(data: Path) -> None:
    for i in range(5):
        (data / f"note{i}.txt").write_text(f"Note number {i}.")
    embedder = GatedEmbedder()
    embedder.gate.clear()  # the start-up pass is held at its first embedding step
    updates: list[tuple[float, str]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        updates.append((done, message or ""))
        embedder.gate.set()  # the call is waiting: let the start-up pass go on

    async def main() -> Any:
        async with Client(build_server(make_settings(data), lambda: embedder)) as client:
            await until(embedder.held.is_set, "the start-up pass began embedding")
            return await client.call_tool("reindex", {}, progress_callback=progress)

    result = anyio.run(main)
    assert not result.is_error, result.content
    # Held in its first embedding step, the start-up pass has read some files or all.
    assert re.match(r"waiting for the start-up pass: (reading|embedding) \d/5", updates[0][1])
    values = [done for done, _ in updates]
    assert values == sorted(set(values))  # one rising count over both passes
    assert updates[-1][1].startswith("reading 5/5")  # then its own pass
    out = result.structured_content
    assert out["files_unchanged"] == 5 and out["chunks_embedded"] == 0  # all done at start-up


@pytest.mark.slow  # over a second: kept out of the fast lane
def test_reindex_while_another_process_holds_the_lock_waits_for_it(data: Path) -> None:
    (data / "a.md").write_text("# A\n\nAlpha.\n")
    holder = hold_lock(data / "index" / "index.lock")
    settings = make_settings(data)

    async def main() -> tuple[Any, Any]:
        server = build_server(settings, FakeEmbedder, answer_within_s=1.0)
        async with Client(server) as client:
            waiting = await client.call_tool("reindex", {})
            holder.kill()
            holder.communicate()
            with anyio.fail_after(30):
                while True:
                    done = await client.call_tool("reindex", {})
                    if not done.is_error and not done.structured_content["running"]:  # type: ignore[index]
                        return waiting, done
                    await anyio.sleep(0.05)

    try:
        waiting, done = anyio.run(main)
    finally:
        holder.kill()
        holder.communicate()
    assert not waiting.is_error, waiting.content
    out = waiting.structured_content
    assert out["running"] and out["waiting_for"] == "other process's"
    assert done.structured_content["files_added"] == 1  # its own pass, once the other ended
    # The kernel released the killed holder's lock: the next reindex runs.
    lock = WriterLock(data / "index" / "index.lock")
    lock.acquire()
    lock.release()


class Opened:
    """A stand-in store that notes when it is started."""

    def __init__(self) -> None:
        self.started = False
        self.stopped = False

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True


def test_the_store_is_opened_only_after_the_handshake_is_answered() -> None:
    from types import SimpleNamespace

    from micro_rag_mcp.serve.opening import Later, StartAfterHandshake

    made: list[Opened] = []

    def open_store() -> Opened:
        made.append(Opened())
        return made[-1]

    later = Later(open_store)  # type: ignore[arg-type]
    middleware = StartAfterHandshake()
    seen: list[tuple[str, bool]] = []

    async def call_next(ctx: Any) -> None:
        seen.append((ctx.method, later.opened))

    async def messages() -> None:
        for method in ("initialize", "notifications/initialized", "tools/list"):
            context = SimpleNamespace(later=later)
            await middleware(SimpleNamespace(method=method, lifespan_context=context), call_next)  # type: ignore[arg-type]

    anyio.run(messages)
    assert seen == [
        ("initialize", False),  # nothing is opened, nor the model loaded, before the answer
        ("notifications/initialized", True),
        ("tools/list", True),
    ]
    assert len(made) == 1 and made[0].started
    later.stop()
    assert made[0].stopped
