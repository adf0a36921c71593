"""Change notifications over real stdio: the server as a subprocess, the SDK's client.

Each notification must come once the index reflects the change: reading the resource
the moment it arrives gives the new text (or says the file is gone)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp_types import ResourceListChangedNotification

from micro_rag_mcp.serve.resource_uri import resource_uri
from tests.mcpkit import run_client, stdio_params, wait_idle
from tests.waiting import until

pytestmark = pytest.mark.slow

DEADLINE_S = 60.0


def _three(data: Path) -> dict[str, str]:
    texts = {
        "edited.md": "# Edited\n\nThe first version of this note.\n",
        "deleted.md": "# Deleted\n\nThis note will be removed.\n",
        "renamed.md": "# Renamed\n\nThis note will move.\n",
        "other.md": "# Other\n\nNobody subscribed to this one.\n",
    }
    for name, text in texts.items():
        (data / name).write_text(text)
    return {name: resource_uri(name) for name in texts}


async def _text(client: Client, uri: str) -> str:
    try:
        return str((await client.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
    except MCPError as e:
        return f"error: {e}"


async def _collect(
    client: Client, events: Any, done: Callable[[dict[str, str], bool], bool]
) -> tuple[dict[str, str], bool]:
    """Events until ``done(said, listed)``: ``said`` maps each updated URI to what reading
    it gave when its last update arrived, ``listed`` tells a list change came. (An update
    from the start-up pass may come first: the new text is waited for.)"""
    said: dict[str, str] = {}
    listed = False
    with anyio.fail_after(DEADLINE_S):
        async for event in events:
            if isinstance(event, ResourceUpdated):
                said[event.uri] = await _text(client, event.uri)
            listed = listed or isinstance(event, ResourcesListChanged)
            if done(said, listed):
                break
    return said, listed


NEW = "The second version"


def test_subscribers_hear_of_an_edit_a_delete_and_a_rename_with_watching_on(
    tmp_path: Path,
) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    uris = _three(data)

    async def main() -> list[tuple[Any, str]]:
        async with Client(stdio_params(data)) as client:
            await wait_idle(client)
            subscribed = [uris["edited.md"], uris["deleted.md"], uris["renamed.md"]]
            async with client.listen(
                resource_subscriptions=subscribed, resources_list_changed=True
            ) as events:
                (data / "edited.md").write_text("# Edited\n\nThe second version of this note.\n")
                (data / "other.md").write_text("# Other\n\nChanged, unheard.\n")
                (data / "deleted.md").unlink()
                (data / "renamed.md").rename(data / "moved.md")
                return await _collect(
                    client,
                    events,
                    lambda said, listed: (
                        listed
                        and NEW in said.get(subscribed[0], "")
                        and all(said.get(u, "").startswith("error:") for u in subscribed[1:])
                    ),
                )

    said, listed = anyio.run(main)
    assert NEW in said[uris["edited.md"]] and listed
    assert "no file" in said[uris["deleted.md"]] and "no file" in said[uris["renamed.md"]]
    assert uris["other.md"] not in said


def test_with_no_watch_nothing_is_sent_until_a_reindex_takes_the_change(tmp_path: Path) -> None:
    """The folder starts empty, so no start-up pass has news to tell apart. The barrier:
    later.md, made and reindexed alone after the edit, is announced; whatever would have
    been sent of the edit before that would have come first."""
    data = tmp_path / "docs"
    data.mkdir()
    edited, later = resource_uri("edited.md"), resource_uri("later.md")

    async def main() -> tuple[list[str], str, dict[str, str], dict[str, str]]:
        async with Client(stdio_params(data, "--no-watch")) as client:
            await wait_idle(client)
            async with client.listen(resource_subscriptions=[edited, later]) as events:
                (data / "edited.md").write_text("# Edited\n\nThe first version of this note.\n")
                await client.call_tool("reindex", {})
                await _collect(client, events, lambda said, _: "first" in said.get(edited, ""))
                (data / "edited.md").write_text("# Edited\n\nThe second version of this note.\n")
                out = await client.call_tool("search", {"query": "edited note"})
                stale = [r["path"] for r in out.structured_content["results"] if r["stale"]]  # type: ignore[index]
                before = await _text(client, edited)  # seen changed on disk, not indexed
                (data / "later.md").write_text("# Later\n\nMade after the edit.\n")
                await client.call_tool("reindex", {"path_glob": "later.md"})
                between, _ = await _collect(client, events, lambda said, _: later in said)
                await client.call_tool("reindex", {})
                after, _ = await _collect(
                    client, events, lambda said, _: NEW in said.get(edited, "")
                )
                return stale, before, between, after

    stale, before, between, after = anyio.run(main)
    assert stale == ["edited.md"] and NEW not in before
    assert set(between) == {later}
    assert NEW in after[edited]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_file_added_while_watching_changes_the_list_for_either_revision(
    tmp_path: Path, mode: str
) -> None:
    """A listen stream that asked for list changes (2026-07-28), or a session of an
    earlier revision, is told once a file is added (the folder starts empty: nothing else
    changes the list), and the list then holds it."""
    data = tmp_path / "docs"
    data.mkdir()
    heard: list[Any] = []

    async def keep(message: Any) -> None:
        heard.append(message)

    async def main() -> tuple[bool | None, list[str]]:
        async with Client(stdio_params(data), mode=mode, message_handler=keep) as client:
            await wait_idle(client)
            declared = client.server_capabilities.resources
            if mode == "legacy":
                (data / "added.md").write_text("# Added\n\nA note that came later.\n")
                await until(
                    lambda: any(isinstance(m, ResourceListChangedNotification) for m in heard),
                    "notifications/resources/list_changed",
                    DEADLINE_S,
                )
            else:
                async with client.listen(resources_list_changed=True) as events:
                    (data / "added.md").write_text("# Added\n\nA note that came later.\n")
                    with anyio.fail_after(DEADLINE_S):
                        assert await events.__anext__() == ResourcesListChanged()
            listed = [r.name for r in (await client.list_resources()).resources]
            return (declared.list_changed if declared is not None else None), listed

    declared, listed = anyio.run(main)
    assert declared is True and listed == ["added.md"]


@pytest.mark.parametrize("watch", ["auto", "poll"])
def test_watching_or_polling_in_process_notifies_without_a_reindex(data: Path, watch: str) -> None:
    uris = _three(data)

    async def check(client: Client) -> dict[str, str]:
        async with client.listen(resource_subscriptions=[uris["edited.md"]]) as events:
            (data / "edited.md").write_text("# Edited\n\nThe second version of this note.\n")
            said, _ = await _collect(
                client, events, lambda said, _: NEW in said.get(uris["edited.md"], "")
            )
            return said

    said = run_client(check, data, watch=watch, poll_interval_s=0.2)
    assert set(said) == {uris["edited.md"]}
