"""Indexed files as MCP resources: the template, pages of files, reads, completion, links,
and change notifications to subscribers (in process; over stdio in test_notifications)."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp_types import (
    ResourceListChangedNotification,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
)

from micro_rag_mcp.serve.resource_uri import TEMPLATE, resource_uri
from micro_rag_mcp.serve.server import build_server
from tests.fakes import FakeEmbedder
from tests.mcpkit import one_run, run_client, wait_idle
from tests.settingskit import make_settings
from tests.waiting import until

DEADLINE_S = 30.0


def _folder(data: Path) -> None:
    (data / "notes").mkdir()
    (data / "notes" / "comets.md").write_text("# Comets\n\nComets have tails of dust and gas.\n")
    (data / "notes" / "bread.txt").write_text("Knead the bread dough, then let it rise.")
    (data / "odd name #1?.txt").write_text("A file whose name needs escaping in a URI.")


def test_the_template_is_listed_and_every_file_is_a_resource(data: Path) -> None:
    _folder(data)

    async def check(client: Client) -> tuple[Any, Any]:
        return await client.list_resource_templates(), await client.list_resources()

    templates, listed = run_client(check, data)
    assert [t.uri_template for t in templates.resource_templates] == [TEMPLATE]
    by_name = {r.name: r for r in listed.resources}
    assert set(by_name) == {"notes/comets.md", "notes/bread.txt", "odd name #1?.txt"}
    comets = by_name["notes/comets.md"]
    assert comets.uri == "micro-rag:///notes/comets.md" and comets.mime_type == "text/markdown"
    assert comets.annotations is not None and comets.annotations.last_modified
    assert comets.meta is not None and "micro-rag/indexed_at" in comets.meta
    assert by_name["odd name #1?.txt"].uri == "micro-rag:///odd%20name%20%231%3F.txt"


def test_resources_list_comes_a_page_at_a_time(data: Path) -> None:
    for i in range(130):
        (data / f"f{i:03}.txt").write_text(f"note number {i}")

    async def pages(client: Client) -> list[list[str]]:
        seen, cursor = [], None
        while True:
            page = await client.list_resources(cursor=cursor)
            seen.append([r.name for r in page.resources])
            cursor = page.next_cursor
            if cursor is None:
                return seen

    seen = run_client(pages, data)
    assert [len(p) for p in seen] == [100, 30]
    assert [n for p in seen for n in p] == [f"f{i:03}.txt" for i in range(130)]


def test_reading_a_resource_returns_what_read_returns(data: Path) -> None:
    _folder(data)

    async def check(client: Client) -> tuple[Any, Any, Any]:
        whole = await client.read_resource(resource_uri("odd name #1?.txt"))
        part = await client.read_resource(
            resource_uri("notes/bread.txt") + "?char_start=16&char_end=21"
        )
        tool = await client.call_tool(
            "read", {"path": "notes/bread.txt", "char_start": 16, "char_end": 21}
        )
        return whole, part, tool

    whole, part, tool = run_client(check, data)
    assert whole.contents[0].text == "A file whose name needs escaping in a URI."
    content = part.contents[0]
    assert content.text == "dough" == tool.structured_content["text"]
    meta = content.meta["micro-rag/read"]
    assert meta == {k: v for k, v in tool.structured_content.items() if k != "text"}


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("micro-rag:///missing.txt", "no file"),
        ("other:///notes/bread.txt", "not a resource of this server"),
        ("micro-rag:///notes/bread.txt?page=x", "page must be a whole number"),
        ("micro-rag:///notes/bread.txt?anchor=zz", "not an anchor from search"),
    ],
)
def test_a_bad_resource_read_is_one_sentence(data: Path, uri: str, says: str) -> None:
    _folder(data)

    async def check(client: Client) -> str:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
        return str(caught.value)

    message = run_client(check, data)
    assert says in message and "\n" not in message


def test_paths_are_completed_for_the_template(data: Path) -> None:
    _folder(data)

    async def check(client: Client) -> list[str]:
        ref = ResourceTemplateReference(uri=TEMPLATE)
        done = await client.complete(ref, {"name": "path", "value": "notes/c"})
        return done.completion.values

    assert run_client(check, data) == ["notes/comets.md"]


def test_search_hits_carry_their_resource_and_a_link(data: Path) -> None:
    _folder(data)

    async def check(client: Client) -> Any:
        return await client.call_tool("search", {"query": "comets dust", "top_k": 2})

    result = run_client(check, data)
    hit = result.structured_content["results"][0]
    assert hit["path"] == "notes/comets.md" and hit["resource"] == resource_uri(hit["path"])
    links = [c for c in result.content if c.type == "resource_link"]
    assert links[0].uri == hit["resource"] and links[0].name == "notes/comets.md"
    assert len({link.uri for link in links}) == len(links)


async def _until(events: Any, settled: Callable[[], Awaitable[bool]]) -> list[Any]:
    """Events until ``settled()`` holds after one (an event of the start-up pass may come
    first, so the state is looked at, not the count)."""
    got = []
    with anyio.fail_after(DEADLINE_S):
        while True:
            got.append(await events.__anext__())
            if await settled():
                return got


def test_subscribers_hear_of_an_edit_once_it_is_indexed_and_others_hear_nothing(
    data: Path,
) -> None:
    _folder(data)
    comets, bread = resource_uri("notes/comets.md"), resource_uri("notes/bread.txt")

    async def text(client: Client) -> str:
        try:
            return str((await client.read_resource(comets)).contents[0].text)  # type: ignore[union-attr]
        except MCPError as e:
            return str(e)

    async def check(client: Client) -> list[Any]:
        async with client.listen(resource_subscriptions=[comets]) as events:
            (data / "notes" / "bread.txt").write_text("Bake the bread.")  # not subscribed
            (data / "notes" / "comets.md").write_text("# Comets\n\nTheir tails point away.\n")
            await client.call_tool("reindex", {})

            async def edited() -> bool:
                return "Their tails point away." in await text(client)

            got = await _until(events, edited)
            (data / "notes" / "comets.md").unlink()
            await client.call_tool("reindex", {})

            async def gone() -> bool:
                return "no file" in await text(client)

            return got + await _until(events, gone)

    got = run_client(check, data)
    assert set(got) == {ResourceUpdated(uri=comets)} and ResourceUpdated(uri=bread) not in got


def test_list_changed_goes_out_when_files_come_and_go(data: Path) -> None:
    _folder(data)

    async def check(client: Client) -> list[Any]:
        async def names() -> set[str]:
            return {r.name for r in (await client.list_resources()).resources}

        async with client.listen(resources_list_changed=True) as events:
            (data / "new.md").write_text("A new note.")
            await client.call_tool("reindex", {})

            async def added() -> bool:
                return "new.md" in await names()

            got = await _until(events, added)
            (data / "new.md").rename(data / "renamed.md")
            await client.call_tool("reindex", {})

            async def renamed() -> bool:
                return (await names()) & {"new.md", "renamed.md"} == {"renamed.md"}

            return got + await _until(events, renamed)

    assert set(run_client(check, data)) == {ResourcesListChanged()}


def test_an_earlier_revision_subscribes_with_resources_subscribe(data: Path) -> None:
    _folder(data)
    comets = resource_uri("notes/comets.md")
    heard: list[Any] = []

    async def handler(message: Any) -> None:
        heard.append(message)

    async def main() -> str:
        server = build_server(make_settings(data), FakeEmbedder)
        async with Client(server, mode="legacy", message_handler=handler) as client:
            await wait_idle(client)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.subscribe_resource(comets)
            (data / "notes" / "bread.txt").write_text("Bake the bread.")
            (data / "notes" / "comets.md").write_text("# Comets\n\nTheir tails point away.\n")
            await client.call_tool("reindex", {})
            text, seen = "", 0
            with anyio.fail_after(DEADLINE_S):  # (an update from the start-up pass may come first)
                # Until the update is heard: the read may show the edit first (the notice of
                # the added file can come before the update, and the pass is done).
                while "Their tails" not in text or not _updated(heard, comets):
                    while len(heard) == seen:
                        await anyio.sleep(0.02)
                    seen = len(heard)
                    text = str((await client.read_resource(comets)).contents[0].text)  # type: ignore[union-attr]
            return text

    text = anyio.run(main)
    updates = {m.params.uri for m in heard if isinstance(m, ResourceUpdatedNotification)}
    assert updates == {comets} and "Their tails point away." in text


def _updated(heard: list[Any], uri: str) -> bool:
    """Whether a resource-updated notification for ``uri`` has come."""
    return any(isinstance(m, ResourceUpdatedNotification) and m.params.uri == uri for m in heard)


async def _text_of(client: Client, uri: str) -> str:
    try:
        return str((await client.read_resource(uri)).contents[0].text)  # type: ignore[union-attr]
    except MCPError as e:
        return str(e)


def _updates(heard: list[Any]) -> list[str]:
    return [m.params.uri for m in heard if isinstance(m, ResourceUpdatedNotification)]


@pytest.mark.slow  # over a second: kept out of the fast lane
def test_sessions_that_did_not_subscribe_to_a_file_hear_nothing_of_it(data: Path) -> None:
    """Three sessions of one run: one listens for comets.md; one of an earlier revision
    subscribes to nothing, and one listens for later.md only. Each of those two then hears
    of later.md, made once comets.md's change was announced: what they were sent of that
    change would have come before (each session's messages keep their order)."""
    (data / "notes").mkdir()  # empty at the start: no start-up pass's news to tell apart
    comets, later = resource_uri("notes/comets.md"), resource_uri("notes/later.md")
    legacy: list[Any] = []

    async def keep(message: Any) -> None:
        legacy.append(message)

    async def main() -> tuple[list[Any], list[Any]]:
        async with (
            one_run(build_server(make_settings(data), FakeEmbedder)) as connect,
            connect() as first,
            connect(mode="legacy", message_handler=keep) as earlier,
            connect() as third,
        ):
            await wait_idle(first)
            async with (
                first.listen(resource_subscriptions=[comets]) as news,
                third.listen(resource_subscriptions=[later]) as third_news,
            ):

                async def says(uri: str, words: str) -> bool:
                    return words in await _text_of(first, uri)

                (data / "notes" / "comets.md").write_text("# Comets\n\nTails of dust.\n")
                await first.call_tool("reindex", {})
                got = await _until(news, lambda: says(comets, "dust"))
                await until(  # the earlier revision's session is greeted: told of the new file
                    lambda: any(isinstance(m, ResourceListChangedNotification) for m in legacy),
                    "the earlier revision's session heard that the list changed",
                )
                (data / "notes" / "comets.md").write_text("# Comets\n\nTails of gas.\n")
                await first.call_tool("reindex", {})
                got += await _until(news, lambda: says(comets, "gas"))

                (data / "notes" / "later.md").write_text("# Later\n\nThe barrier.\n")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    await earlier.subscribe_resource(later)
                await first.call_tool("reindex", {})
                third_got = await _until(third_news, lambda: says(later, "barrier"))
                await until(lambda: later in _updates(legacy), "it heard of later.md")
                return got, third_got

    got, third_got = anyio.run(main)
    assert set(got) == {ResourceUpdated(uri=comets)}
    assert third_got == [ResourceUpdated(uri=later)]
    assert _updates(legacy) == [later]


def test_an_earlier_revision_unsubscribes_and_hears_of_added_files(data: Path) -> None:
    """A second ``resources/subscribe`` of a URI is the same subscription, and one
    ``resources/unsubscribe`` ends it; the server declares ``listChanged`` and a file
    added is told (after the updates of the same change: the barrier for a.md)."""
    (data / "notes").mkdir()  # empty at the start: no start-up pass's news to tell apart
    a, b = resource_uri("notes/a.md"), resource_uri("notes/b.md")
    heard: list[Any] = []

    async def keep(message: Any) -> None:
        heard.append(message)

    def listed() -> int:
        return sum(isinstance(m, ResourceListChangedNotification) for m in heard)

    async def main() -> bool | None:
        server = build_server(make_settings(data), FakeEmbedder)
        async with Client(server, mode="legacy", message_handler=keep) as client:
            await wait_idle(client)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for uri in (a, a, b):
                    await client.subscribe_resource(uri)
                await client.unsubscribe_resource(a)
            (data / "notes" / "a.md").write_text("# A\n\nFirst.\n")
            await client.call_tool("reindex", {})
            await until(lambda: listed() == 1, "the list changed: a.md was added")
            (data / "notes" / "b.md").write_text("# B\n\nSecond.\n")
            await client.call_tool("reindex", {})
            await until(lambda: listed() == 2 and b in _updates(heard), "b.md was announced")
            capabilities = client.server_capabilities.resources
            return capabilities.list_changed if capabilities is not None else None

    assert anyio.run(main) is True
    assert _updates(heard) == [b]


class _Heard:
    """A bus that keeps what is published to it."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def publish(self, event: Any) -> None:
        self.events.append(event)


def test_a_change_made_before_the_first_look_is_announced(data: Path) -> None:
    """The versions seen as the store opens are the baseline: a pass that ends before the
    follower first looks (a fast first reindex on a loaded machine) is still announced."""
    from micro_rag_mcp.local.engine import Engine
    from micro_rag_mcp.serve.resources import Documents

    _folder(data)
    engine = Engine(make_settings(data), FakeEmbedder)
    heard = _Heard()
    documents = Documents(heard, follow_s=0.05)  # type: ignore[arg-type]
    try:
        documents.opening(engine)
        engine.load_model()
        engine.reindex()  # done before anybody follows

        async def follow() -> None:
            listing = documents.listing
            assert listing is not None
            with anyio.move_on_after(DEADLINE_S):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(documents._follow, listing)
                    while ResourceUpdated(uri=resource_uri("notes/comets.md")) not in heard.events:
                        await anyio.sleep(0.05)
                    tasks.cancel_scope.cancel()

        anyio.run(follow)
    finally:
        if documents.listing is not None:
            documents.listing.close()
        engine.stop()
    assert ResourcesListChanged() in heard.events
    assert ResourceUpdated(uri=resource_uri("notes/comets.md")) in heard.events
