"""Serving over stdio until the client leaves or a signal asks the server to stop.

The MCP SDK reads stdin in a worker thread that only end-of-file can end
(modelcontextprotocol/python-sdk#3551), so a signal could not stop a server whose client
keeps stdin open: Ctrl+C did nothing until stdin closed. And it writes stdout in a worker
thread too, which a client that stops reading blocks for ever, so the server could not
stop at all. Here the SDK reads and writes sockets that take the place of fd 0 and fd 1,
and relay threads (``relay.py``) copy the client's lines in and the answers out, within
bounds. Ending the input, whether the client closed stdin or SIGINT or SIGTERM came,
shuts the input socket for writing: the server then ends exactly as when a client
leaves. Requests in flight are cancelled, the engine stops at its next step and saves
what it did, answers not taken within ``END_GRACE_S`` are dropped, and ``main`` returns 0.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Protocol

from micro_rag_mcp.serve.relay import END_GRACE_S, InFlight, InputRelay, Outbox, OutputRelay

logger = logging.getLogger(__name__)


class StdioServer(Protocol):
    async def run_stdio_async(self) -> None: ...


class StopSignals:
    """SIGINT and SIGTERM from the moment this is made: noted, never raised mid-start-up.

    Made before the heavy imports, so a Ctrl+C while the server starts cannot end it with
    a traceback out of some half-done import; once serving, a signal ends the input.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.received: list[int] = []
        for signum in self.SIGNALS:
            signal.signal(signum, self._note)

    def _note(self, signum: int, frame: object) -> None:
        self.received.append(signum)

    def announce(self, signum: int) -> None:
        logger.info("%s: stopping", signal.Signals(signum).name)


def serve_stdio(server: StdioServer, signals: StopSignals) -> None:
    """Serve until stdin closes, or SIGINT or SIGTERM arrives; the server then stops cleanly."""
    import anyio

    if signals.received:  # asked to stop before anything started
        signals.announce(signals.received[0])
        return
    try:
        anyio.run(_serve, server, signals)
    finally:
        for signum in signals.SIGNALS:  # done: a late Ctrl+C must not print a traceback
            signal.signal(signum, signal.SIG_IGN)


async def _serve(server: StdioServer, signals: StopSignals) -> None:
    import anyio
    import anyio.to_thread

    ended: list[float] = []
    stdout = os.dup(1)
    in_flight = InFlight()
    outbox = Outbox(stdout, on_broken=lambda: relay.end())

    def on_end() -> None:  # answers get END_GRACE_S to leave, then are dropped
        ended.append(time.monotonic())
        timer = threading.Timer(END_GRACE_S, outbox.abandon)
        timer.daemon = True
        timer.start()

    output = OutputRelay(outbox, in_flight, stdout)
    relay = InputRelay(outbox, in_flight, on_end)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_end_input_on_signal, relay, signals)
        await server.run_stdio_async()
        tg.cancel_scope.cancel()
    deadline = (ended[0] if ended else time.monotonic()) + END_GRACE_S
    await anyio.to_thread.run_sync(output.flush, deadline)


async def _end_input_on_signal(relay: InputRelay, signals: StopSignals) -> None:
    import anyio

    with anyio.open_signal_receiver(*signals.SIGNALS) as received:
        if signals.received:  # came while the event loop was starting
            signals.announce(signals.received[0])
            relay.end()
        async for signum in received:
            if not signals.received:
                signals.announce(signum)
            signals.received.append(signum)
            relay.end()
