"""The two relays between the client's pipes and the MCP SDK, and the bounds they keep.

The SDK reads and writes sockets that take the place of fd 0 and fd 1; a thread copies
each way, line by line. Between them they bound what a client can make the server hold:

- **requests in flight**: at most ``MAX_IN_FLIGHT`` requests are being answered; one
  more is answered at once with a "server busy" error instead of queueing without end;
- **unsent bytes**: answers the client has not taken wait in an outbox of at most
  ``MAX_UNSENT_BYTES``; while it is full the client's input is not read (its pipe fills
  and its writes block), so a client that stops reading cannot grow the server;
- **message size**: a line longer than ``MAX_MESSAGE_BYTES`` is answered with an error
  when it ends, never buffered whole: only its first and last ``KEPT_BYTES`` are kept,
  to answer the request's own id (``framing.oversized_id``), else ``null``;
- **the end**: once the input ends (end-of-file, a signal, or the client's stdout gone)
  answers have ``END_GRACE_S`` to leave, then what is unsent is dropped, so a client
  that never reads cannot hold a stopping server.

Lines the SDK would drop without a reply, and requests sent before ``initialize``, are
answered here (``framing.py``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import select
import socket
import termios
import threading
import time
from collections import deque
from collections.abc import Callable

from micro_rag_mcp.serve.framing import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    NOT_INITIALIZED,
    SERVER_BUSY,
    answered,
    classify,
    error_line,
    needs_initialize,
    oversized_id,
)

logger = logging.getLogger(__name__)

MIB = 1024 * 1024
MAX_IN_FLIGHT = 32
MAX_UNSENT_BYTES = 4 * MIB
MAX_MESSAGE_BYTES = 4 * MIB
KEPT_BYTES = 16 * 1024  # of an oversized line, at each end: where its request's id is
END_GRACE_S = 5.0
_CHUNK = 1 << 16


class InFlight:
    """The ids of the requests passed to the SDK and not yet answered."""

    def __init__(self, limit: int = MAX_IN_FLIGHT) -> None:
        self.limit = limit
        self._keys: set[str] = set()
        self._lock = threading.Lock()

    def add(self, key: str) -> bool:
        """Count a request in; False (not counted) when ``limit`` are in flight."""
        with self._lock:
            if len(self._keys) >= self.limit and key not in self._keys:
                return False
            self._keys.add(key)
            return True

    def done(self, key: str) -> None:
        with self._lock:
            self._keys.discard(key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)


class Outbox:
    """Lines for the client, at most ``limit`` bytes unsent; a thread writes them to ``fd``.

    ``abandon`` drops what is unsent and every line put after it (the client is gone, or
    will not read). ``on_broken`` runs once if writing to ``fd`` fails.
    """

    def __init__(self, fd: int, on_broken: Callable[[], None], limit: int = MAX_UNSENT_BYTES):
        self.limit = limit
        self._fd = fd
        self._on_broken = on_broken
        self._lines: deque[bytes] = deque()
        self._unsent = 0  # bytes queued or being written
        self._abandoned = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._drain, name="micro-rag-stdout", daemon=True)
        self._thread.start()

    @property
    def unsent(self) -> int:
        with self._cond:
            return self._unsent

    def put(self, line: bytes, *, wait: bool) -> None:
        """Queue ``line``; with ``wait``, first wait until there is room (or abandon)."""
        with self._cond:
            while wait and self._unsent >= self.limit and not self._abandoned:
                self._cond.wait()
            if self._abandoned:
                return
            self._lines.append(line)
            self._unsent += len(line)
            self._cond.notify_all()

    def wait_room(self, timeout: float) -> bool:
        """Whether there is room now or within ``timeout`` seconds."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._unsent < self.limit or self._abandoned, timeout
            )

    def abandon(self) -> None:
        with self._cond:
            if not self._abandoned and self._unsent:
                logger.info("dropping %d bytes of answers the client did not read", self._unsent)
            self._abandoned = True
            self._lines.clear()
            self._unsent = 0
            self._cond.notify_all()

    def _drain(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._lines))
                line = self._lines.popleft()
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError as e:
                logger.debug("stdout closed: %s", e)
                self.abandon()
                self._on_broken()
                return
            finally:
                with self._cond:
                    self._unsent = max(0, self._unsent - len(line)) if not self._abandoned else 0
                    self._cond.notify_all()


class InputRelay:
    """Copies the client's lines from fd 0 into a socket that becomes the new fd 0.

    ``end`` gives the SDK end-of-file; it is called when the client closes stdin, and by
    the signal handler. Each line is sorted first (``framing.classify``).
    """

    def __init__(self, outbox: Outbox, in_flight: InFlight, on_end: Callable[[], None]) -> None:
        self._outbox = outbox
        self._in_flight = in_flight
        self._on_end = on_end
        self._ended = threading.Event()
        self._greeted = False  # the client has sent initialize (or needs none: ``framing``)
        self._source = os.dup(0)
        ours, theirs = socket.socketpair()
        os.dup2(theirs.fileno(), 0)
        theirs.close()
        self._sink = ours
        self._thread = threading.Thread(target=self._copy, name="micro-rag-stdin", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        try:
            self._copy_lines()
        except OSError as e:  # the input failed, or it was ended while a copy was under way
            logger.debug("stdin relay ended: %s", e)
        finally:
            self.end()

    def _copy_lines(self) -> None:
        buffer = bytearray()
        oversized: _Oversized | None = None  # the ends of a line over the size limit
        while not self._ended.is_set():
            if not self._outbox.wait_room(0.1):
                if _hung_up(self._source):  # the client left while its answers wait
                    return
                continue
            data = os.read(self._source, _CHUNK)
            if not data:
                return
            searched = len(buffer)
            buffer += data
            while (newline := buffer.find(b"\n", searched)) >= 0:
                line = bytes(buffer[:newline])
                del buffer[: newline + 1]
                searched = 0
                if oversized is not None:
                    oversized.add(line)
                    self._outbox.put(oversized.refusal(), wait=False)
                    oversized = None
                else:
                    self._pass(line)
            if oversized is None and len(buffer) > MAX_MESSAGE_BYTES:
                oversized = _Oversized(bytes(buffer[:KEPT_BYTES]))
            if oversized is not None:
                oversized.add(bytes(buffer))
                buffer.clear()

    def _pass(self, line: bytes) -> None:
        if not line.strip():
            return
        incoming = classify(line)
        if incoming.kind == "reply":
            self._outbox.put(incoming.reply, wait=False)
            return
        if incoming.kind == "request" and not self._greeted:
            if incoming.method == "initialize" or incoming.enveloped:
                self._greeted = True
            elif needs_initialize(incoming.method):
                reply = error_line(json.loads(incoming.key), INVALID_PARAMS, NOT_INITIALIZED)
                self._outbox.put(reply, wait=False)
                return
        if incoming.kind == "request" and not self._in_flight.add(incoming.key):
            reason = (
                f"server busy: {self._in_flight.limit} requests are being answered; "
                "send this one again when an answer arrives"
            )
            self._outbox.put(error_line(json.loads(incoming.key), SERVER_BUSY, reason), wait=False)
            return
        if incoming.kind == "cancel":
            self._in_flight.done(incoming.key)  # the SDK never answers a cancelled request
        self._sink.sendall(line + b"\n")

    def end(self) -> None:
        """End the server's input; safe to call from any thread, any number of times."""
        first = not self._ended.is_set()
        self._ended.set()
        with contextlib.suppress(OSError):
            self._sink.shutdown(socket.SHUT_WR)
        if first:
            self._on_end()


class OutputRelay:
    """A socket that becomes the new fd 1: the SDK's lines go through the outbox."""

    def __init__(self, outbox: Outbox, in_flight: InFlight, stdout: int) -> None:
        self._outbox = outbox
        self._in_flight = in_flight
        self._stdout = stdout  # the client's pipe, put back on fd 1 by ``flush``
        ours, theirs = socket.socketpair()
        os.dup2(theirs.fileno(), 1)
        theirs.close()
        self._source = ours
        self._busy = threading.Event()  # a chunk is read and not yet queued
        self._thread = threading.Thread(target=self._pump, name="micro-rag-answers", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        buffer = bytearray()
        try:
            while True:
                data = self._source.recv(_CHUNK)
                if not data:
                    return
                self._busy.set()
                searched = len(buffer)
                buffer += data
                while (newline := buffer.find(b"\n", searched)) >= 0:
                    line = bytes(buffer[: newline + 1])
                    del buffer[: newline + 1]
                    searched = 0
                    key = answered(line)
                    self._outbox.put(line, wait=True)
                    if key is not None:
                        self._in_flight.done(key)
                self._busy.clear()
        except OSError as e:
            logger.debug("answer relay ended: %s", e)

    def flush(self, deadline: float) -> None:
        """Until ``deadline``: wait for what the SDK wrote to leave; then restore fd 1."""
        while time.monotonic() < deadline:
            if not self._busy.is_set() and _unread(self._source) == 0 and not self._outbox.unsent:
                break
            time.sleep(0.01)
        os.dup2(self._stdout, 1)


class _Oversized:
    """A line over ``MAX_MESSAGE_BYTES``: its first and last ``KEPT_BYTES``, the middle
    dropped as it passes, so that its refusal can name the request's id."""

    def __init__(self, head: bytes) -> None:
        self._head = head
        self._tail = bytearray()

    def add(self, data: bytes) -> None:
        self._tail += data[-KEPT_BYTES:]
        del self._tail[:-KEPT_BYTES]

    def refusal(self) -> bytes:
        reason = f"invalid request: a message longer than {MAX_MESSAGE_BYTES:,} bytes"
        return error_line(oversized_id(self._head, bytes(self._tail)), INVALID_REQUEST, reason)


def _hung_up(fd: int) -> bool:
    """Whether the other end of ``fd`` (a pipe or socket) has closed it."""
    poller = select.poll()
    poller.register(fd, select.POLLHUP | select.POLLERR)
    return any(events & (select.POLLHUP | select.POLLERR) for _, events in poller.poll(0))


def _unread(sock: socket.socket) -> int:
    buf = bytearray(4)
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, buf)
    return int.from_bytes(buf, "little")
