"""A reindex call answers within its deadline; its pass goes on whatever the call does.

The passes are held by the gated fake embedder, so no outcome depends on speed: a pass
held at its gate cannot end before the test opens it. Servers get a short answer
deadline through ``build_server``'s seam where a call must come back while its pass runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from micro_rag_mcp.serve.server import build_server
from tests.fakes import GatedEmbedder
from tests.mcpkit import complete, wait_for_index
from tests.settingskit import make_settings
from tests.waiting import DEADLINE_S, until

SHORT_S = 0.2  # the answer deadline where a call must come back while its pass is held
NOTES = 100  # one chunk each: four embedding steps of 32


def write_notes(data: Path, count: int = NOTES) -> None:
    for i in range(count):
        (data / f"note{i:03d}.txt").write_text(f"Note number {i} about the harbour.")


def edit_notes(data: Path, count: int = NOTES) -> None:
    """New text in every note: a forced pass over unchanged text embeds nothing (vectors
    are keyed by their text), so a pass the test holds at its gate needs new text."""
    for i in range(count):
        (data / f"note{i:03d}.txt").write_text(f"Note number {i} about the lighthouse.")


Progress = list[tuple[float, str]]


async def follow(
    client: Client, arguments: dict[str, Any], condition: Any, what: str
) -> list[dict[str, Any]]:
    """Call reindex with ``arguments`` until its result satisfies ``condition``; every
    result. What a pass has shown by the deadline depends on its thread's speed, so a
    test asks again (each call answers within the server's deadline) instead of once."""
    results: list[dict[str, Any]] = []

    async def answered() -> bool:
        results.append((await client.call_tool("reindex", arguments)).structured_content or {})
        return bool(condition(results[-1]))

    await until(answered, lambda: f"{what}; {results[-1]}", interval=0)
    return results


def recorder(updates: Progress) -> Any:
    async def progress(done: float, total: float | None, message: str | None) -> None:
        updates.append((done, message or ""))

    return progress


def test_a_long_pass_answers_in_time_with_running_and_goes_on(data: Path) -> None:
    write_notes(data)
    embedder = GatedEmbedder()

    async def main() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        server = build_server(make_settings(data), lambda: embedder, answer_within_s=SHORT_S)
        async with Client(server) as client:
            await wait_for_index(client, complete, "the start-up pass ended")
            edit_notes(data)
            embedder.gate.clear()
            answers = await follow(
                client, {"force": True}, lambda r: r["phase"] is not None, "a phase shows"
            )
            during = await wait_for_index(client, lambda i: i["indexing"], "indexing shows")
            embedder.gate.set()
            after = await wait_for_index(client, complete, "the forced pass ended")
            return answers, during, after

    answers, during, after = anyio.run(main)
    assert all(a["running"] for a in answers)  # the pass is held: no call sees its end
    assert [a["joined"] for a in answers] == [False] + [True] * (len(answers) - 1)
    answer = answers[-1]
    assert answer["phase"] in ("reading", "embedding") and answer["waiting_for"] is None
    assert answer["done"] is not None and answer["total"] is not None
    assert answer["files_updated"] is None and answer["files_failed"] is None
    assert answer["chunks_total"] == NOTES
    assert answer["notices"][0].startswith("the pass is still running (")
    assert "each call answers within 0.2 s" in answer["notices"][0]
    assert during["indexing"] is True
    assert after["chunks_with_vectors"] == NOTES
    assert embedder.embedded == 2 * NOTES  # the start-up pass, then every chunk again


def test_a_second_call_with_the_same_arguments_joins_the_pass_and_gets_its_report(
    data: Path,
) -> None:
    write_notes(data)
    embedder = GatedEmbedder()
    first_updates: Progress = []
    second_updates: Progress = []

    async def second_progress(done: float, total: float | None, message: str | None) -> None:
        second_updates.append((done, message or ""))
        embedder.gate.set()  # the second call follows the pass: let it end

    async def main() -> list[Any]:
        server = build_server(make_settings(data), lambda: embedder, answer_within_s=DEADLINE_S)
        async with Client(server) as client:
            await wait_for_index(client, complete, "the start-up pass ended")
            edit_notes(data)
            embedder.gate.clear()
            results: list[Any] = []

            async def first() -> None:
                call = client.call_tool(
                    "reindex", {"force": True}, progress_callback=recorder(first_updates)
                )
                results.append(await call)

            async with anyio.create_task_group() as tg:
                tg.start_soon(first)
                await until(embedder.held.is_set, "the first call's pass is held")
                second = await client.call_tool(
                    "reindex", {"force": True}, progress_callback=second_progress
                )
            return [*results, second]

    first, second = (r.structured_content for r in anyio.run(main))
    assert (first["running"], first["joined"]) == (False, False)
    assert (second["running"], second["joined"]) == (False, True)
    for report in (first, second):
        assert report["files_updated"] == NOTES and report["chunks_embedded"] == NOTES
    assert first_updates and second_updates  # both calls were told how far the pass was
    assert embedder.embedded == 2 * NOTES  # one forced pass, not two


def test_a_call_with_other_arguments_is_queued_behind_the_running_pass(data: Path) -> None:
    write_notes(data, 5)
    embedder = GatedEmbedder()

    async def main() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
        server = build_server(make_settings(data), lambda: embedder, answer_within_s=SHORT_S)
        async with Client(server) as client:
            await wait_for_index(client, complete, "the start-up pass ended")
            edit_notes(data, 5)
            embedder.gate.clear()
            forced = await client.call_tool("reindex", {"force": True})
            queued = await follow(
                client,
                {"path_glob": "note00*"},
                lambda r: r["waiting_for"] is not None,
                "the queued request shows the pass it waits for",
            )
            embedder.gate.set()
            ended = await follow(
                client, {"path_glob": "note00*"}, lambda r: not r["running"], "the queued ends"
            )
            return forced.structured_content or {}, queued, ended[-1]

    forced, queued, again = anyio.run(main)
    assert forced["running"] is True
    assert all(q["running"] for q in queued) and queued[0]["joined"] is False
    waiting = queued[-1]
    assert waiting["waiting_for"] == "reindex"  # phase, done and total are the forced pass's
    assert waiting["chunks_embedded"] == 0
    assert "it waits for the reindex pass" in waiting["notices"][0]
    # The queued pass ran after the forced one had embedded everything: nothing left to do.
    assert (again["files_unchanged"], again["chunks_embedded"]) == (5, 0)
    assert embedder.embedded == 2 * 5  # the start-up pass and the forced one


@pytest.mark.slow  # over a second: kept out of the fast lane
def test_a_call_that_times_out_does_not_stop_its_pass(data: Path) -> None:
    write_notes(data)
    embedder = GatedEmbedder()

    async def main() -> dict[str, Any]:
        server = build_server(make_settings(data), lambda: embedder)
        async with Client(server) as client:
            await wait_for_index(client, complete, "the start-up pass ended")
            edit_notes(data)
            embedder.gate.clear()
            with pytest.raises(MCPError):  # the client gives up and cancels its request
                await client.call_tool("reindex", {"force": True}, read_timeout_seconds=0.5)
            embedder.gate.set()
            return await wait_for_index(client, complete, "the pass went on to its end")

    index = anyio.run(main)
    assert index["chunks_with_vectors"] == index["chunks_total"] == NOTES
    assert embedder.embedded == 2 * NOTES


def test_a_reindex_during_the_start_up_pass_answers_in_time_and_runs_after_it(
    data: Path,
) -> None:
    write_notes(data, 5)
    embedder = GatedEmbedder()
    embedder.gate.clear()  # the start-up pass is held at its first embedding step

    async def main() -> list[dict[str, Any]]:
        server = build_server(make_settings(data), lambda: embedder, answer_within_s=SHORT_S)
        async with Client(server) as client:
            await until(embedder.held.is_set, "the start-up pass is held")
            answers = await follow(
                client,
                {"force": True},
                lambda r: r["waiting_for"] is not None,
                "the call shows the start-up pass it waits for",
            )
            embedder.gate.set()
            ended = await follow(client, {"force": True}, lambda r: not r["running"], "it ends")
            await wait_for_index(client, complete, "both passes ended")
            return [*answers, ended[-1]]

    *answers, ended = anyio.run(main)
    assert ended["files_updated"] == 5  # the client's forced pass ran, after the start-up
    assert all(a["running"] for a in answers)
    answer = answers[-1]
    assert answer["waiting_for"] == "start-up"
    assert answer["phase"] in ("reading", "embedding")
    assert "it waits for the start-up pass" in answer["notices"][0]


@pytest.mark.parametrize(
    ("watch", "answered_by_start_up"),
    [pytest.param("poll", True, marks=pytest.mark.slow), ("off", False)],  # slow: the watcher
)
def test_a_plain_reindex_during_the_start_up_pass_is_answered_by_it_when_watched(
    data: Path, watch: str, answered_by_start_up: bool
) -> None:
    write_notes(data, 5)
    embedder = GatedEmbedder()
    embedder.gate.clear()  # the start-up pass is held at its first embedding step
    settings = make_settings(data, watch=watch, poll_interval_s=3600.0)
    updates: Progress = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        updates.append((done, message or ""))
        embedder.gate.set()  # the call follows the start-up pass: let it go on

    async def main() -> Any:
        server = build_server(settings, lambda: embedder, answer_within_s=DEADLINE_S)
        async with Client(server) as client:
            await until(embedder.held.is_set, "the start-up pass is held")
            return await client.call_tool("reindex", {}, progress_callback=progress)

    report = anyio.run(main).structured_content
    assert updates[0][1].startswith("waiting for the start-up pass: ")
    assert report["running"] is False
    if answered_by_start_up:  # the changes after its reading are the watcher's
        assert (report["files_added"], report["files_unchanged"]) == (5, 0)
        assert not any(m.startswith("reading") for _, m in updates)  # no pass of its own
    else:  # nothing follows the folder: the client's own pass reads it again
        assert (report["files_added"], report["files_unchanged"]) == (0, 5)
    assert report["chunks_embedded"] == (5 if answered_by_start_up else 0)
    assert embedder.embedded == 5
