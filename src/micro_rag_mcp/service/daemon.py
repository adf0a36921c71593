"""The service: one process per user and installation, serving every launch's session.

It listens on a Unix socket in its private directory (``runtime``), never on a network.
Each connection comes from a launch of ``micro-rag-mcp`` (``launch``): the service checks
that the peer runs as the same user (``SO_PEERCRED``), reads the launch's command line
(the hello), answers ``{"ok": …}`` or the one-sentence refusal a launch prints, then
serves one MCP session with that launch's own title, instructions and options, on the
engine it shares with the other sessions on that index (``indexes``). A launch may also
ask for the sessions of an index (``{"sessions": INDEX_FOLDER}``), as ``micro-rag status``
does. The service exits ``grace_s`` seconds after its last session ends.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from micro_rag_mcp.core.errors import ConfigError
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.service.indexes import Indexes, SessionInfo
from micro_rag_mcp.service.queries import answer
from micro_rag_mcp.service.runtime import PID, SOCKET, ServiceDir
from micro_rag_mcp.service.session import read_line, run_session

logger = logging.getLogger(__name__)

HELLO_WITHIN_S = 10.0  # a connection that says nothing this long is closed
MAX_HELLO_BYTES = 1024 * 1024
IDLE_POLL_S = 0.2

FIRST_WAIT_S = 10.0  # a service no launch reaches this long after it starts exits
THREADS = 256  # worker threads for the sessions' tool calls (anyio's default is 40)

ParseLaunch = Callable[[Sequence[str], bool], Settings]  # argv, given; raises ConfigError


def peer_uid(sock: socket.socket) -> int:
    """The user of the process at the other end of a Unix socket, as the kernel says."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


class Service:
    """The sessions of one service, and when it may go."""

    def __init__(
        self,
        where: ServiceDir,
        indexes: Indexes,
        parse: ParseLaunch,
        grace_s: float,
    ) -> None:
        self.where = where
        self.indexes = indexes
        self.parse = parse
        self.grace_s = grace_s
        self._sessions = 0
        self._served = False  # a session has come
        self._last_left = time.monotonic()

    async def run(self) -> None:
        """Listen until ``grace_s`` after the last session (or a signal), then stop."""
        anyio.to_thread.current_default_thread_limiter().total_tokens = THREADS
        listener = await anyio.create_unix_listener(self.where.socket, mode=0o600)
        bound = os.stat(SOCKET, dir_fd=self.where.fd).st_ino
        _write_pid(self.where)
        logger.info("service %d listening at %s", os.getpid(), self.where.path / SOCKET)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._accept, listener, tasks)
                tasks.start_soon(self._stop_on_signal, tasks)
                await self._until_idle()
                tasks.cancel_scope.cancel()
        finally:
            _unlink_if_ours(self.where, bound)
            await listener.aclose()
            await anyio.to_thread.run_sync(self.indexes.stop_all)
            logger.info("service %d stopped", os.getpid())

    async def _until_idle(self) -> None:
        while self._sessions or time.monotonic() - self._last_left < self._grace():
            await anyio.sleep(IDLE_POLL_S)
        logger.info("no session for %g s: the service exits", self.grace_s)

    def _grace(self) -> float:
        return self.grace_s if self._served else max(self.grace_s, FIRST_WAIT_S)

    async def _stop_on_signal(self, tasks: anyio.abc.TaskGroup) -> None:
        import signal

        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
            async for signum in received:
                logger.info("%s: the service stops", signal.Signals(signum).name)
                tasks.cancel_scope.cancel()

    async def _accept(self, listener: Any, tasks: anyio.abc.TaskGroup) -> None:
        while True:
            stream: SocketStream = await listener.accept()
            tasks.start_soon(self._connection, stream)

    async def _connection(self, stream: SocketStream) -> None:
        self._sessions += 1
        self._served = True
        try:
            async with stream:
                uid = peer_uid(stream.extra(SocketAttribute.raw_socket))
                if uid != os.getuid():
                    logger.warning("refused a connection from uid %d", uid)
                    return
                await self._serve(stream)
        except Exception:
            logger.exception("a session failed")
        finally:
            self._sessions -= 1
            self._last_left = time.monotonic()

    async def _serve(self, stream: SocketStream) -> None:
        reader = BufferedByteReceiveStream(stream)
        try:
            with anyio.fail_after(HELLO_WITHIN_S):
                hello = json.loads(await read_line(reader, MAX_HELLO_BYTES))
        except (TimeoutError, anyio.EndOfStream, ValueError, anyio.DelimiterNotFound):
            logger.info("a connection sent no hello")
            return
        if "argv" not in hello:  # a question from ``micro-rag``, not a session
            reply = await anyio.to_thread.run_sync(answer, self.indexes, hello)
            await stream.send(json.dumps(reply).encode() + b"\n")
            return
        try:
            settings = self.parse(hello["argv"], bool(hello.get("given")))
            handle = await anyio.to_thread.run_sync(
                self.indexes.attach, settings, SessionInfo(settings.title, int(hello["pid"]))
            )
        except ConfigError as e:
            await stream.send(json.dumps({"error": str(e), "exit": 2}).encode() + b"\n")
            return
        try:
            await stream.send(json.dumps({"ok": os.getpid()}).encode() + b"\n")
            from micro_rag_mcp.serve.server import build_server

            def unused() -> Embedder:  # the shared index loads the model
                raise AssertionError("a shared session loads no model of its own")

            server = build_server(settings, unused, shared=handle)
            await run_session(server, stream, reader)
        finally:
            # The launch may end now; an engine no session needs stops after (its pass
            # stops at its next step, which may take a while).
            await stream.aclose()
            await anyio.to_thread.run_sync(handle.stop)


def _write_pid(where: ServiceDir) -> None:
    fd = where.open_file(PID + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)
    os.replace(PID + ".tmp", PID, src_dir_fd=where.fd, dst_dir_fd=where.fd)


def _unlink_if_ours(where: ServiceDir, inode: int) -> None:
    """Remove the socket unless a newer service has bound its own there since."""
    try:
        if os.stat(SOCKET, dir_fd=where.fd).st_ino == inode:
            where.remove(SOCKET)
            where.remove(PID)
    except FileNotFoundError:
        pass
