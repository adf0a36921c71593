"""Serving over stdio until the client leaves or a signal asks the server to stop.

The MCP SDK reads stdin in a worker thread that only end-of-file can end
(modelcontextprotocol/python-sdk#3551), so a signal could not stop a server whose client
keeps stdin open: Ctrl+C did nothing until stdin closed. Here the SDK reads a socket that
takes the place of fd 0, and a relay thread copies the client's bytes into it. Ending
the input, whether the client closed stdin or SIGINT or SIGTERM came, shuts the socket
for writing: the server then ends exactly as when a client leaves. Requests in flight
are cancelled, the engine stops at its next step and saves what it did, and ``main``
returns 0.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
from typing import Protocol

logger = logging.getLogger(__name__)


class StdioServer(Protocol):
    async def run_stdio_async(self) -> None: ...


class InputRelay:
    """Copies fd 0 into a socket that becomes the new fd 0; ``end`` gives it end-of-file."""

    def __init__(self) -> None:
        self._source = os.dup(0)
        ours, theirs = socket.socketpair()
        os.dup2(theirs.fileno(), 0)
        theirs.close()
        self._sink = ours
        self._thread = threading.Thread(target=self._copy, name="micro-rag-stdin", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        try:
            while data := os.read(self._source, 1 << 16):
                self._sink.sendall(data)
        except OSError as e:  # the input failed, or it was ended while a copy was under way
            logger.debug("stdin relay ended: %s", e)
        finally:
            self.end()

    def end(self) -> None:
        """End the server's input; safe to call from any thread, any number of times."""
        with contextlib.suppress(OSError):
            self._sink.shutdown(socket.SHUT_WR)


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

    relay = InputRelay()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_end_input_on_signal, relay, signals)
        await server.run_stdio_async()
        tg.cancel_scope.cancel()


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
