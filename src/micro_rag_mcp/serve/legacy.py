"""Change notifications to sessions of the revisions before 2026-07-28.

Such a session subscribes with ``resources/subscribe`` and is told of changes on its own
connection: the SDK's subscription bus serves ``subscriptions/listen`` streams only. The
SDK makes a ``ServerSession`` for every request; what lasts is the connection under it,
so subscriptions are kept by connection (a second ``resources/subscribe`` of a URI is the
same subscription, ``resources/unsubscribe`` ends it) and forgotten when it closes.

Every session that completed the handshake is also told when the list of files changes:
the server declares ``listChanged`` to these revisions, under which a client can neither
ask for the notification nor decline it (servers that declare it SHOULD send it; a client
that has no use for it ignores it).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession

logger = logging.getLogger(__name__)


def declare_list_changed(low: Server[Any]) -> None:
    """Make ``low`` declare ``resources.listChanged`` in its ``initialize`` answers.

    The SDK takes the flag only as an argument of ``create_initialization_options``, which
    its own transports call without one; the 2026-07-28 answer derives it by itself.
    """
    declared: Callable[..., InitializationOptions] = low.create_initialization_options
    options = NotificationOptions(resources_changed=True)

    def with_list_changed(
        notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> InitializationOptions:
        return declared(notification_options or options, *args, **kwargs)

    low.create_initialization_options = with_list_changed  # type: ignore[method-assign]


class LegacySessions:
    """The greeted connections of earlier revisions, each with the URIs it subscribed to.

    Used as a server middleware, it notes each connection as its client sends
    ``notifications/initialized``.
    """

    def __init__(self) -> None:
        self._peers: dict[Connection, tuple[ServerSession, set[str]]] = {}

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized":
            self._peer(ctx.session)
        return result

    def subscribe(self, session: ServerSession, uri: str) -> None:
        self._peer(session)[1].add(uri)

    def unsubscribe(self, session: ServerSession, uri: str) -> None:
        peer = self._peers.get(_connection(session))
        if peer is not None:
            peer[1].discard(uri)

    async def updated(self, uri: str) -> None:
        """Tell the connections subscribed to ``uri`` that it changed."""
        for connection, (session, uris) in list(self._peers.items()):
            if uri in uris:
                await self._send(connection, session.send_resource_updated(uri))

    async def list_changed(self) -> None:
        """Tell every greeted connection that files were added or removed."""
        for connection, (session, _) in list(self._peers.items()):
            await self._send(connection, session.send_resource_list_changed())

    def _peer(self, session: ServerSession) -> tuple[ServerSession, set[str]]:
        connection = _connection(session)
        if connection not in self._peers:
            self._peers[connection] = (session, set())
            connection.exit_stack.callback(partial(self._peers.pop, connection, None))
        return self._peers[connection]

    async def _send(self, connection: Connection, sending: Awaitable[None]) -> None:
        try:
            await sending
        except Exception as e:  # the client went away: forget the connection
            logger.info("dropping a session's subscriptions: %s", e)
            self._peers.pop(connection, None)


def _connection(session: ServerSession) -> Connection:
    """The connection a request came on. A ``ServerSession`` sends a notification without
    a request on its connection's own channel, so the first one kept serves for all."""
    return session._connection  # the SDK shows low-level handlers the connection only there
