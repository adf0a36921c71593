"""The MCP server of one folder: its tools, its resources, and the store they share.

``build_server`` wires them: the tools (``tools``) and the resources (``resources``)
work with one ``Serving``, the lifespan context, whose store is opened, and its
background start-up (model load, reconcile, incremental reindex) begun, once the
handshake is answered (``opening.StartAfterHandshake``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus

from micro_rag_mcp import __version__
from micro_rag_mcp.core.address import StoreConfig
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.serve.jobs import (
    ANSWER_WITHIN_S,
    ReindexJobs,
)
from micro_rag_mcp.serve.opening import UNGREETED_S, Later, StartAfterHandshake
from micro_rag_mcp.serve.resources import Documents
from micro_rag_mcp.serve.tools import Serving, tools
from micro_rag_mcp.serve.waiting import reindex_waiting
from micro_rag_mcp.store import Store, open_store

if TYPE_CHECKING:
    from micro_rag_mcp.model.choice import Loader


logger = logging.getLogger(__name__)


class SharedIndex(Protocol):
    """An index that sessions of one service share (``service.indexes``): each session
    opens its own handle on the one engine, and all queue their passes in one ``jobs``."""

    @property
    def jobs(self) -> ReindexJobs: ...
    def open(self) -> Store: ...


def build_server(
    settings: Settings,
    load_embedder: Loader,
    store: StoreConfig | None = None,
    *,
    folder: Path | None = None,
    answer_within_s: float = ANSWER_WITHIN_S,
    shared: SharedIndex | None = None,
) -> MCPServer[Serving]:
    """The MCP server for one folder (or the shared ``store``, indexing ``folder`` if
    given); nothing starts until a client connects. A ``reindex`` call answers within
    ``answer_within_s`` seconds, its pass going on if it has not ended (``jobs``).
    With ``shared``, a session of the service on an index other sessions use too."""
    bus = InMemorySubscriptionBus()
    documents = Documents(bus)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Serving]) -> AsyncIterator[Serving]:
        if shared is None:
            later = Later(
                lambda: open_store(settings, load_embedder, store, folder=folder),
                documents.opening,
            )
            jobs = ReindexJobs(
                lambda force, glob, progress: reindex_waiting(later.store, force, glob, progress)
            )
        else:
            later, jobs = Later(shared.open, documents.opening), shared.jobs
        later.open_after(UNGREETED_S)
        try:
            async with documents.serving(later):
                yield Serving(later, jobs, settings.exts, answer_within_s)
        finally:
            with anyio.CancelScope(shield=True):
                if shared is None:
                    jobs.close()
                await anyio.to_thread.run_sync(later.stop)  # a pass stops at its next step
                if shared is None:
                    await anyio.to_thread.run_sync(jobs.join, 60.0)

    server = MCPServer(
        name=settings.title,
        instructions=settings.instructions,
        version=__version__,
        lifespan=lifespan,
        tools=tools(),
        subscriptions=bus,
        middleware=[StartAfterHandshake()],
    )
    documents.install(server)
    return server
