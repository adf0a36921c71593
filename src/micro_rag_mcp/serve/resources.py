"""The MCP edge for documents: every indexed file a resource, and its change notifications.

One resource template, ``micro-rag:///{+path}{?page,char_start,char_end,anchor}``, covers
every indexed file; ``resources/read`` returns what the ``read`` tool returns (the text,
and its locators under ``_meta``), ``resources/list`` pages through the indexed files, and
completion offers their paths. The handlers are the SDK's low-level ones, since the
high-level template answers neither with a page cursor nor with per-read ``_meta``.

Notifications go out once the index reflects a change: ``follow`` polls the store's
cheap version token (the catalog's write counter) and, when it moved, compares each
file's indexed version with the last one seen. A changed, deleted or renamed file is a
``resources/updated`` for its URI, an added or removed one a ``list_changed``. Reading
the index rather than the watcher's events means every writer counts (the watcher, a
``reindex`` call, another process's pass over the same folder) and nothing is announced
before its text can be read. Subscribers are of two eras: ``subscriptions/listen``
streams (2026-07-28) get the events through the SDK's bus, which filters by each
stream's URIs and list changes; sessions of earlier revisions (``legacy``) get the
updates of the URIs they sent ``resources/subscribe`` for, and every list change. Nobody
else is sent anything.
"""

from __future__ import annotations

import base64
import binascii
import logging
import mimetypes
import posixpath
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp.shared.uri_template import UriTemplate
from mcp_types import (
    INVALID_PARAMS,
    Annotations,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    ContentBlock,
    EmptyResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceLink,
    ResourceTemplate,
    ResourceTemplateReference,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)

from micro_rag_mcp.core.errors import MicroRagError
from micro_rag_mcp.core.listing import FileListing, IndexedFile
from micro_rag_mcp.search.reading import MAX_CHARS
from micro_rag_mcp.serve.legacy import LegacySessions, declare_list_changed
from micro_rag_mcp.serve.read_result import read_result
from micro_rag_mcp.serve.resource_uri import TEMPLATE, resource_uri
from micro_rag_mcp.serve.tool_results import SearchResult, wire
from micro_rag_mcp.store import Store

logger = logging.getLogger(__name__)


class StoreSource(Protocol):
    """Where the server's store comes from: opened at its first use (``server.Later``)."""

    @property
    def opened(self) -> bool: ...

    def store(self) -> Store: ...


PAGE = 100  # files per resources/list page, and paths per completion
FOLLOW_S = 0.25  # how often the index's version is looked at
META = "micro-rag/read"  # the _meta key of a read's locators
_PARSED = UriTemplate.parse(TEMPLATE)


class Documents:
    """The resources of one server: the store's listing while it runs, and the sessions
    of earlier protocol revisions that are told of changes."""

    def __init__(self, bus: SubscriptionBus, follow_s: float = FOLLOW_S) -> None:
        self.bus = bus
        self.follow_s = follow_s
        self.listing: FileListing | None = None
        self.legacy = LegacySessions()
        self._source: StoreSource | None = None
        self._baseline: tuple[object, dict[str, str]] | None = None

    # -- life --------------------------------------------------------------------------

    @asynccontextmanager
    async def serving(self, source: StoreSource) -> AsyncIterator[None]:
        """List the store's files and follow its changes while the server runs, from the
        moment the store is opened (after the handshake: see ``server.Later``)."""
        self._source = source
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._follow_once_open, source)
                try:
                    yield
                finally:
                    tasks.cancel_scope.cancel()
        finally:
            if self.listing is not None:
                self.listing.close()
            self.listing = None
            self._source = None
            self._baseline = None

    def opening(self, store: Store) -> None:
        """Take the listing and its file versions from a store just opened, before it
        starts: whatever its start-up pass or a first ``reindex`` changes is announced,
        however soon it ends (a first look taken later could already include it)."""
        try:
            listing = store.listing()
            self._baseline = (listing.version(), listing.file_versions())
            self.listing = listing
        except Exception:  # the follower takes its first look itself
            logger.exception("listing the index for resource notifications failed")

    def _listing(self) -> FileListing:
        """The listing, opening the store first if it is not open yet."""
        if self.listing is None:
            if self._source is None:
                raise MicroRagError("the server is not serving yet")
            self.listing = self._source.store().listing()
        return self.listing

    async def _follow_once_open(self, source: StoreSource) -> None:
        while not source.opened:
            await anyio.sleep(self.follow_s)
        listing = await anyio.to_thread.run_sync(self._listing)
        await self._follow(listing)

    async def _follow(self, listing: FileListing) -> None:
        seen: object = None
        known: dict[str, str] | None = None
        if self._baseline is not None:
            seen, known = self._baseline
        while True:
            try:
                version = await anyio.to_thread.run_sync(listing.version)
                if known is None or version != seen:
                    versions = await anyio.to_thread.run_sync(listing.file_versions)
                    if known is not None:
                        await self.announce(known, versions)
                    seen, known = version, versions
            except Exception:  # a store that cannot be read now is looked at again
                logger.exception("following the index for resource notifications failed")
            await anyio.sleep(max(self.follow_s, listing.poll_s))

    async def announce(self, before: dict[str, str], after: dict[str, str]) -> None:
        """Tell the subscribers what differs between two sets of file versions."""
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        for path in changed:
            uri = resource_uri(path)
            await self.bus.publish(ResourceUpdated(uri=uri))
            await self.legacy.updated(uri)
        if before.keys() != after.keys():
            await self.bus.publish(ResourcesListChanged())
            await self.legacy.list_changed()

    # -- handlers ------------------------------------------------------------------------

    def install(self, server: MCPServer[Any]) -> None:
        """Answer the resource methods of ``server`` (replacing the SDK's own), and tell
        sessions of earlier revisions of list changes too."""
        low = server._lowlevel_server  # the SDK exposes its request handlers only there
        declare_list_changed(low)
        server.middleware.append(self.legacy)
        low.add_request_handler("resources/list", PaginatedRequestParams, self._list)
        low.add_request_handler("resources/templates/list", PaginatedRequestParams, self._templates)
        low.add_request_handler("resources/read", ReadResourceRequestParams, self._read)
        low.add_request_handler("resources/subscribe", SubscribeRequestParams, self._subscribe)
        low.add_request_handler(
            "resources/unsubscribe", UnsubscribeRequestParams, self._unsubscribe
        )
        low.add_request_handler("completion/complete", CompleteRequestParams, self._complete)

    async def _list(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams
    ) -> ListResourcesResult:
        after = _cursor(params.cursor)
        files = await self._files("", after, PAGE)
        more = _cursor_of(files[-1].path) if len(files) == PAGE else None
        return ListResourcesResult(resources=[_resource(f) for f in files], next_cursor=more)

    async def _templates(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams
    ) -> ListResourceTemplatesResult:
        template = ResourceTemplate(
            uri_template=TEMPLATE,
            name="document",
            title="An indexed document",
            description="The indexed text of one file of the data folder, as the read tool "
            "returns it (locators under _meta). page, char_start and char_end select part "
            "of it, anchor finds a search hit's passage again.",
            mime_type="text/plain",
        )
        return ListResourceTemplatesResult(resource_templates=[template])

    async def _read(
        self, ctx: ServerRequestContext[Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        args = _arguments(params.uri)
        if self._source is None:
            raise MicroRagError("the server is not serving yet")
        store = self._source.store()
        try:
            passage = await anyio.to_thread.run_sync(
                lambda: store.read(
                    str(args["path"]),
                    char_start=_int(args, "char_start"),
                    char_end=_int(args, "char_end"),
                    page=_int(args, "page"),
                    max_chars=MAX_CHARS,
                    anchor=_str(args, "anchor"),
                )
            )
        except MicroRagError as e:
            raise MCPError(INVALID_PARAMS, str(e), {"uri": params.uri}) from e
        meta = {k: v for k, v in wire(read_result(passage)).items() if k != "text"}
        contents = TextResourceContents(
            uri=params.uri, text=passage.text, mime_type="text/plain", _meta={META: meta}
        )
        return ReadResourceResult(contents=[contents])

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        _arguments(params.uri)  # only our own URIs
        self.legacy.subscribe(ctx.session, params.uri)
        return EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        self.legacy.unsubscribe(ctx.session, params.uri)
        return EmptyResult()

    async def _complete(
        self, ctx: ServerRequestContext[Any], params: CompleteRequestParams
    ) -> CompleteResult:
        ref, argument = params.ref, params.argument
        if not (
            isinstance(ref, ResourceTemplateReference)
            and ref.uri == TEMPLATE
            and argument.name == "path"
        ):
            return CompleteResult(completion=Completion(values=[]))
        files = await self._files(argument.value, "", PAGE + 1)
        values = [f.path for f in files[:PAGE]]
        return CompleteResult(completion=Completion(values=values, has_more=len(files) > PAGE))

    async def _files(self, prefix: str, after: str, limit: int) -> list[IndexedFile]:
        return await anyio.to_thread.run_sync(lambda: self._listing().files(prefix, after, limit))


def with_links(result: SearchResult, text: str) -> CallToolResult:
    """A search's tool result: the structured result, ``text`` for clients that read only
    text, and a ``resource_link`` for each file among the hits (in rank order, once each)."""
    links: dict[str, ResourceLink] = {}
    for hit in result.results:
        if hit.path not in links:
            links[hit.path] = ResourceLink(
                uri=hit.resource, name=hit.path, mime_type=_mime(hit.path)
            )
    content: list[ContentBlock] = [TextContent(text=text), *links.values()]
    return CallToolResult(content=content, structured_content=wire(result))


def _resource(f: IndexedFile) -> Resource:
    return Resource(
        uri=resource_uri(f.path),
        name=f.path,
        title=posixpath.basename(f.path),
        mime_type=_mime(f.path),
        size=f.size if f.size >= 0 else None,
        annotations=Annotations(last_modified=_iso(f.mtime_ns / 1e9)),
        _meta={"micro-rag/indexed_at": _iso(f.indexed_at)},
    )


def _mime(path: str) -> str:
    return mimetypes.guess_type(path, strict=False)[0] or "text/plain"


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _cursor(cursor: str | None) -> str:
    if not cursor:
        return ""
    try:
        return base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        raise MCPError(
            INVALID_PARAMS, f"cursor {cursor[:40]!r} is not one this server gave"
        ) from None


def _cursor_of(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode("utf-8")).decode("ascii")


def _arguments(uri: str) -> dict[str, str | list[str]]:
    args = _PARSED.match(uri)
    if args is None or not args.get("path"):
        raise MCPError(
            INVALID_PARAMS, f"{uri[:200]!r} is not a resource of this server (micro-rag:///PATH)"
        )
    return args


def _int(args: dict[str, str | list[str]], name: str) -> int | None:
    value = _str(args, name)
    if value is None:
        return None
    if not value.isdigit():
        raise MCPError(INVALID_PARAMS, f"{name} must be a whole number (got {value[:40]!r})")
    return int(value)


def _str(args: dict[str, str | list[str]], name: str) -> str | None:
    value = args.get(name)
    if isinstance(value, list):
        value = value[0] if value else None
    return value or None


__all__: Sequence[str] = ["Documents", "with_links"]
