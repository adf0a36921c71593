"""A launch's session, forwarded to the service, and resumed if the service dies.

The launch runs ``serve.stdio.serve_stdio`` as a server would, with its bounds and its
answers to malformed lines (``serve.relay``), but in place of the MCP server it runs a
``Forwarder``: the client's lines go to the service's socket, the service's to the
client. It remembers the client's ``initialize`` and ``notifications/initialized`` and
the requests in flight. When the service's connection ends while the client is still
there (a crash, ``kill -9``), each request in flight gets an error saying to send it
again; the launch connects again (starting a new service: ``launch.connect``), says
hello, repeats the handshake (its answer is not passed on: the client has one), and
goes on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial

from micro_rag_mcp.serve.relay import END_GRACE_S

logger = logging.getLogger(__name__)

SERVICE_GONE = -32603
GONE_MESSAGE = (
    "the search service stopped while answering this request (it is being restarted); "
    "send the request again"
)
REPLAY_ID = "micro-rag-replayed-initialize"
_CHUNK = 1 << 16
POLL_S = 0.05


class Forwarder:
    """Copies lines between the launch's stdio (fd 0 and fd 1, the relays' sockets) and
    the service; ``reconnect`` gives a new, greeted connection, or raises."""

    def __init__(self, first: socket.socket, reconnect: Callable[[], socket.socket]) -> None:
        self._conn = first
        self._reconnect = reconnect
        self._lock = threading.Lock()  # guards the connection, the handshake, in-flight ids
        # Held while a line goes to the service, taken before ``_lock`` (which the send
        # does not hold): answers keep flowing while a send waits for the service to read.
        self._sending = threading.Lock()
        self._initialize: dict[str, object] | None = None
        self._initialized: bytes | None = None
        self._in_flight: dict[str, object] = {}  # json of an id -> the id
        self._swallow: str | None = None  # the replayed initialize's answer is ours
        self._input_ended = threading.Event()
        self._input_ended_at: float | None = None
        self._ended = threading.Event()  # the service ended the session (or is gone for good)
        self.restarts = 0

    async def run_stdio_async(self) -> None:
        """Forward until the service ends the session, or until ``END_GRACE_S`` after the
        client's input ended (answers still running in the service are not waited for,
        as a standalone server does not wait for them)."""
        import anyio

        threading.Thread(target=self._up, name="micro-rag-to-service", daemon=True).start()
        threading.Thread(
            target=self._down_to_end, name="micro-rag-from-service", daemon=True
        ).start()
        while not self._ended.is_set():
            ended_at = self._input_ended_at
            if ended_at is not None and time.monotonic() - ended_at > END_GRACE_S:
                logger.info(
                    "the service had not ended the session %g s after the input", END_GRACE_S
                )
                break
            await anyio.sleep(POLL_S)
        with self._lock, contextlib.suppress(OSError):
            self._conn.shutdown(socket.SHUT_RDWR)  # the service drops what it still answers

    def _down_to_end(self) -> None:
        try:
            self._down()
        finally:
            self._ended.set()

    # -- client to service -------------------------------------------------------------

    def _up(self) -> None:
        try:
            for line in _lines(lambda: os.read(0, _CHUNK)):
                self._send_up(line)
        except OSError as e:
            logger.debug("client input ended: %s", e)
        finally:
            self._input_ended_at = time.monotonic()
            self._input_ended.set()
            with self._lock:
                _shut_write(self._conn)

    def _send_up(self, line: bytes) -> None:
        message = _parse(line)
        with self._sending:  # never waited for by ``_down`` but to recover
            with self._lock:
                if message is not None:
                    self._note(message, line)
                conn = self._conn
            try:
                conn.sendall(line + b"\n")
            except OSError as e:  # the service is gone: ``_down`` answers and reconnects
                logger.debug("service connection lost while sending: %s", e)

    def _note(self, message: dict[str, object], line: bytes) -> None:
        method, has_id = message.get("method"), "id" in message
        if method == "initialize":
            self._initialize = message
        elif method == "notifications/initialized":
            self._initialized = line
        if isinstance(method, str) and has_id:
            self._in_flight[json.dumps(message["id"])] = message["id"]

    # -- service to client -------------------------------------------------------------

    def _down(self) -> None:
        while True:
            with self._lock:
                conn = self._conn
            for line in _lines(partial(_recv, conn)):
                self._send_down(line)
            if self._input_ended.is_set():
                return  # the client left; the service ended the session
            if not self._recover():
                return

    def _send_down(self, line: bytes) -> None:
        message = _parse(line)
        if message is not None and "method" not in message and "id" in message:
            key = json.dumps(message["id"])
            with self._lock:
                self._in_flight.pop(key, None)
                if key == self._swallow:
                    self._swallow = None
                    return
        _write_all(1, line + b"\n")

    def _recover(self) -> bool:
        """The service is gone: answer what was in flight, connect again, replay the
        handshake; False if no service can be had (the session ends)."""
        logger.warning("the service's connection ended: reconnecting")
        with self._sending, self._lock:
            for request_id in self._in_flight.values():
                error = {"code": SERVICE_GONE, "message": GONE_MESSAGE}
                reply = {"jsonrpc": "2.0", "id": request_id, "error": error}
                _write_all(1, json.dumps(reply).encode() + b"\n")
            self._in_flight.clear()
            self._swallow = None
            try:
                conn = self._reconnect()
            except Exception as e:
                logger.error("the service cannot be restarted: %s", e)
                return False
            self._conn.close()
            self._conn = conn
            self.restarts += 1
            if self._initialize is not None:
                replay = {**self._initialize, "id": REPLAY_ID}
                self._swallow = json.dumps(REPLAY_ID)
                conn.sendall(json.dumps(replay).encode() + b"\n")
            if self._initialized is not None:
                conn.sendall(self._initialized + b"\n")
            if self._input_ended.is_set():
                _shut_write(conn)
        return True


def _lines(read: Callable[[], bytes]) -> Iterator[bytes]:
    """The lines ``read`` gives, without their newlines, until it gives b"" (or fails)."""
    buffer = bytearray()
    while True:
        try:
            data = read()
        except OSError:
            return
        if not data:
            return
        buffer += data
        while (newline := buffer.find(b"\n")) >= 0:
            yield bytes(buffer[:newline])
            del buffer[: newline + 1]


def _recv(conn: socket.socket) -> bytes:
    return conn.recv(_CHUNK)


def _parse(line: bytes) -> dict[str, object] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _shut_write(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_WR)
