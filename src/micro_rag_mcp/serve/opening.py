"""The store of one run of the server, opened after the handshake (or by a timer)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from micro_rag_mcp.core.errors import Stopped
from micro_rag_mcp.store import Store

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext


logger = logging.getLogger(__name__)
UNGREETED_S = 2.0  # a server no client greets within this opens and indexes anyway


class Later:
    """The store of one run of the server, opened and started at its first use, or by
    ``open_after``'s timer."""

    def __init__(
        self, open_store: Callable[[], Store], on_open: Callable[[Store], None] | None = None
    ) -> None:
        self._open = open_store
        self._on_open = on_open
        self._lock = threading.Lock()
        self._store: Store | None = None
        self._stopped = False
        self._timer: threading.Timer | None = None

    def open_after(self, seconds: float) -> None:
        """Open the store in ``seconds`` unless it is opened (or stopped) before."""
        self._timer = threading.Timer(seconds, self._open_on_time)
        self._timer.daemon = True
        self._timer.start()

    def _open_on_time(self) -> None:
        try:
            self.store()
        except Exception:  # each tool call tries again, and says why it cannot
            logger.exception("cannot open the index")

    @property
    def opened(self) -> bool:
        return self._store is not None

    def store(self) -> Store:
        """The store, opened and started (its model's load, its start-up pass) if need be."""
        with self._lock:
            if self._stopped:
                raise Stopped("the server is stopping")
            if self._store is None:
                opened = self._open()
                if self._on_open is not None:
                    self._on_open(opened)
                opened.start()
                self._store = opened
            return self._store

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._stopped = True
            if self._store is not None:
                self._store.stop()


class StartAfterHandshake:
    """Opens and starts the store (the model's load, the start-up pass, the watcher) at
    the first message after ``initialize``: the client's ``initialized`` notification,
    sent once it has the answer, or its first request.

    Nothing competes with the handshake for the cores or the interpreter: with the
    model's load begun before it, and the engine opened in the lifespan, the handshake
    took 1.4 to 2.3 times a bare server's on two busy cores (docs/benchmarks.md). A
    server that no client greets opens the store after ``UNGREETED_S`` all the same.
    """

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        later: Later = ctx.lifespan_context.later
        if ctx.method != "initialize" and not later.opened:
            try:
                await anyio.to_thread.run_sync(later.store)
            except Exception:  # each tool call tries again, and says why it cannot
                logger.exception("cannot open the index")
        return await call_next(ctx)
