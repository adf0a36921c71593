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

from micro_rag_mcp.serve.resource_uri import resource_uri
from tests.mcpkit import run_client, stdio_params, wait_idle

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


def test_with_no_watch_only_a_reindex_brings_notifications(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    uris = _three(data)

    async def main() -> tuple[dict[str, str], list[str]]:
        async with Client(stdio_params(data, "--no-watch")) as client:
            await wait_idle(client)
            async with client.listen(resource_subscriptions=[uris["edited.md"]]) as events:
                (data / "edited.md").write_text("# Edited\n\nThe second version of this note.\n")
                out = await client.call_tool("search", {"query": "edited note"})
                stale = [r["path"] for r in out.structured_content["results"] if r["stale"]]  # type: ignore[index]
                # seen changed on disk, not indexed: the text stays the first version...
                before = await _text(client, uris["edited.md"])
                await client.call_tool("reindex", {})  # ...until a reindex
                said, _ = await _collect(
                    client, events, lambda said, _: NEW in said.get(uris["edited.md"], "")
                )
                return said, [*stale, before]

    said, (*stale, before) = anyio.run(main)
    assert stale == ["edited.md"] and NEW not in before
    assert NEW in said[uris["edited.md"]]


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
