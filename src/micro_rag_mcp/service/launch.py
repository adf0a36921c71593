"""A launch finds the user's service, or starts it: exactly one, however many race.

``connect`` tries the socket; if no service answers there, it takes the start lock
(``flock``, so only one launch starts a service and the others wait for it), tries
again, and only then removes the stale socket (no process listens behind it: the kernel
refuses the connection) and starts ``python -m micro_rag_mcp.service`` in a session of
its own, its log in the service's directory. It waits, still holding the lock, until the
new service accepts a connection. Then it says hello (``hello``): the launch's command
line, which the service answers with ``{"ok": PID}`` or a refusal.

This module imports nothing heavy: a launch stays a small relay (``relay``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from micro_rag_mcp.service.runtime import LOCK, LOG, ServiceDir

logger = logging.getLogger(__name__)

START_WITHIN_S = 60.0  # a service that does not listen this long after its start failed
POLL_S = 0.02
HELLO_ANSWER_S = 120.0  # preparing an index folder may take a while on a slow disk


class ServiceUnavailable(Exception):
    """No service could be reached or started: the launch serves in one process."""


@dataclass(frozen=True, slots=True)
class Hello:
    """What a launch tells the service: its command line (with its folders resolved),
    whether ``--index-folder`` was given, and its process id."""

    argv: Sequence[str]
    given: bool
    pid: int

    def line(self) -> bytes:
        body = {"argv": list(self.argv), "given": self.given, "pid": self.pid}
        return json.dumps(body).encode() + b"\n"


class Refused(Exception):
    """The service refused the session: ``str(e)`` is the sentence, ``code`` the exit."""

    def __init__(self, sentence: str, code: int) -> None:
        super().__init__(sentence)
        self.code = code


def try_connect(where: ServiceDir) -> socket.socket | None:
    """A connection to the service listening in ``where``, or None if none listens."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(where.socket)
    except OSError as e:
        sock.close()
        if e.errno in (errno.ENOENT, errno.ECONNREFUSED):
            return None
        raise ServiceUnavailable(f"cannot reach the service: {e.strerror}") from e
    return sock


@contextlib.contextmanager
def start_lock(where: ServiceDir, deadline: float) -> Iterator[None]:
    """Hold the start lock (waiting for another launch's start, at most until ``deadline``)."""
    fd = where.open_file(LOCK, os.O_RDWR | os.O_CREAT)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    why = "another launch held the start lock too long"
                    raise ServiceUnavailable(why) from None
                time.sleep(POLL_S)
        yield
    finally:
        os.close(fd)  # releases the lock


def connect(where: ServiceDir, service_args: Sequence[str]) -> socket.socket:
    """A connection to the service, started first if none listens."""
    sock = try_connect(where)
    if sock is not None:
        return sock
    deadline = time.monotonic() + START_WITHIN_S
    with start_lock(where, deadline):
        sock = try_connect(where)
        if sock is not None:
            return sock
        where.remove("service.sock")  # stale: nothing listens behind it
        process = _start(where, service_args)
        while (sock := try_connect(where)) is None:
            if process.poll() is not None:
                raise ServiceUnavailable(
                    f"the service exited at start-up (status {process.returncode}; "
                    f"see {where.path / LOG})"
                )
            if time.monotonic() > deadline:
                raise ServiceUnavailable(f"the service did not listen within {START_WITHIN_S} s")
            time.sleep(POLL_S)
        logger.debug("started the service (process %d)", process.pid)
        return sock


def _start(where: ServiceDir, service_args: Sequence[str]) -> subprocess.Popen[bytes]:
    with contextlib.suppress(FileNotFoundError):
        os.replace(LOG, LOG + ".1", src_dir_fd=where.fd, dst_dir_fd=where.fd)
    log = where.open_file(LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "micro_rag_mcp.service", *service_args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # not in the client's process group: its Ctrl+C is not ours
            close_fds=True,
        )
    finally:
        os.close(log)


def hello(sock: socket.socket, greeting: Hello, timeout: float = HELLO_ANSWER_S) -> int:
    """Say hello on a fresh connection; the service's pid. Refused if the service refuses
    the session, ConnectionError if it closed the connection first (it was exiting)."""
    sock.sendall(greeting.line())
    answer = _read_line(sock, timeout)
    if answer is None:
        raise ConnectionError("the service closed the connection")
    reply: dict[str, Any] = json.loads(answer)
    if "error" in reply:
        raise Refused(str(reply["error"]), int(reply.get("exit", 1)))
    return int(reply["ok"])


def _read_line(sock: socket.socket, timeout: float) -> bytes | None:
    """One line, read a byte at a time (nothing past it is taken from the socket)."""
    sock.settimeout(timeout)
    line = bytearray()
    try:
        while (byte := sock.recv(1)) and byte != b"\n":
            line += byte
    finally:
        sock.settimeout(None)
    return bytes(line) if byte == b"\n" else None


def ask(where: ServiceDir, request: dict[str, Any], timeout: float = 60.0) -> dict[str, Any] | None:
    """The running service's answer to ``request`` (``queries``); None if none runs."""
    sock = try_connect(where)
    if sock is None:
        return None
    with sock:
        sock.sendall(json.dumps(request).encode() + b"\n")
        answer = _read_line(sock, timeout)
    if answer is None:
        return None
    reply: dict[str, Any] = json.loads(answer)
    return reply


def ask_sessions(where: ServiceDir, index_folder: str) -> list[dict[str, Any]] | None:
    """The sessions the running service serves on ``index_folder``; None if none runs."""
    reply = ask(where, {"sessions": index_folder}, 10.0)
    return None if reply is None else list(reply["sessions"])
