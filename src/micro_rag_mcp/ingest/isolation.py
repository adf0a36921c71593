"""Reading documents in a child process, so no single file can hang or exhaust the server.

Document parsers (PDF, Office, HTML, ...) run arbitrary work on untrusted bytes. The
reader process has a memory ceiling, and a file that takes longer than the time limit has
its reader killed and is recorded as failed; the next file gets a fresh reader. A stop
asked meanwhile (``halt``) kills the reader too: OCR of a scan can take a minute, and a
server that is told to stop must not wait for it.

What the reader logs while it reads a file (its own warnings, a parser's, Python's
``warnings``, text a library prints to ``sys.stderr``) is sent back with the answer and
logged here under ``micro_rag_mcp.reader``, each line naming the file by its path in the
data folder: the reader opens a file as ``/proc/self/fd/N``, a name that means nothing
to the person reading the log, and its own writes to stderr would cut through the
command line's progress bar, which the parent's log lines go around.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from micro_rag_mcp.core.errors import ReadError, Stopped
from micro_rag_mcp.ingest import extra_readers
from micro_rag_mcp.ingest.readers import Document, read_document
from micro_rag_mcp.ingest.readers.ocr import ocr_installed

logger = logging.getLogger(__name__)
reader_logger = logging.getLogger("micro_rag_mcp.reader")
_FD_NAME = re.compile(r"/proc/self/fd/\d+")
MAX_LOG_LINES = 50  # of one file's read, sent back

# The reader process's address-space ceiling (RLIMIT_AS): a quarter of the machine's
# memory, at least 1 GiB (the interpreter and the parsers map about 300 MB before reading
# a byte) and at most 2 GiB. Text is bounded far below this (readers/guards.py); the
# ceiling is for what a parser allocates on its own.
READER_MEMORY_SHARE = 0.25
READER_MEMORY_MIN_BYTES = 1024**3
READER_MEMORY_MAX_BYTES = 2 * 1024**3
# With the ocr extra installed the floor is higher: recognizing one page of print (the
# detector at 2,000 px a side) fails at a 1 GiB ceiling (NumPy cannot allocate, or
# onnxruntime throws std::bad_alloc at 1.25 GiB) and succeeds at 1.5 GiB, with a peak
# resident size of about 650 MB (onnxruntime's arenas reserve address space beyond what
# they touch). That floor is still never more than half the machine's memory.
READER_MEMORY_MIN_BYTES_OCR = 3 * 1024**3 // 2


def reader_memory_bytes(physical: int | None = None, *, ocr: bool | None = None) -> int:
    """The address-space ceiling of a reader process.

    ``physical``: the machine's memory (this machine's when None); ``ocr``: whether the
    ocr extra is installed (looked up when None).
    """
    if physical is None:
        try:
            physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return READER_MEMORY_MAX_BYTES
    if ocr is None:
        ocr = ocr_installed()
    floor = READER_MEMORY_MIN_BYTES
    if ocr:
        floor = max(floor, min(READER_MEMORY_MIN_BYTES_OCR, physical // 2))
    share = int(physical * READER_MEMORY_SHARE)
    return max(floor, min(READER_MEMORY_MAX_BYTES, share))


def _peak_rss_bytes() -> int:
    """This process's peak resident memory so far.

    Linux: the high-water mark of this program's own memory (``VmHWM``). ``ru_maxrss``
    would not do there: it keeps the peak of the process before its ``exec``, so a reader
    started by a large server would report the server's size as its own.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _die_with_parent() -> None:
    """Linux: have the kernel kill this reader if the server dies mid-parse."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


HALT_CHECK_S = 0.1  # how often a read looks whether it is to stop


def _serve(conn: Connection, memory_bytes: int, readers: str = "") -> None:
    """The reader process: read each requested file, answer with text or a reason, and
    the lines it logged meanwhile."""
    _die_with_parent()
    extra_readers.install(readers)
    with contextlib.suppress(ValueError, OSError):  # a lower hard limit is already in place
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    lines = _ReadLog()
    logging.getLogger().handlers[:] = [lines]
    logging.captureWarnings(True)
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        path, max_bytes, root = request
        answer: tuple[Any, ...]
        lines.clear()
        printed = io.StringIO()
        try:
            with contextlib.redirect_stderr(printed):
                doc = _read_inside(Path(path), max_bytes, Path(root))
            answer = ("ok", *_fields(doc))
        except ReadError as e:
            answer = ("error", str(e), e.transient)
        except MemoryError:
            answer = ("error", _memory_reason(memory_bytes), False)
        except Exception as e:  # a parser bug must cost one file, not the reader
            answer = ("error", f"reader failed: {type(e).__name__}: {e}"[:300], False)
        for text in printed.getvalue().splitlines():
            lines.add(logging.WARNING, text)
        name = os.path.relpath(path, root)
        conn.send((_peak_rss_bytes(), answer, lines.named(name)))


class _ReadLog(logging.Handler):
    """The lines logged during one read (at most ``MAX_LOG_LINES``)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._lines: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.add(record.levelno, record.getMessage())

    def add(self, level: int, text: str) -> None:
        if text.strip() and len(self._lines) < MAX_LOG_LINES:
            self._lines.append((level, text.strip()))

    def clear(self) -> None:
        self._lines.clear()

    def named(self, name: str) -> list[tuple[int, str]]:
        """The lines, the file's descriptor name replaced by ``name``, and ``name`` put
        first in a line that does not say it."""
        out = []
        for level, text in self._lines:
            text = _FD_NAME.sub(name, text)
            out.append((level, text if name in text else f"{name}: {text}"))
        return out


def _memory_reason(memory_bytes: int) -> str:
    return f"refused: reading needs more than the reader's {memory_bytes // 1024**2:,} MB of memory"


def _fields(doc: Document) -> tuple[Any, ...]:
    """A document as plain values (str, int, tuples) in field order, to cross the pipe."""
    return tuple(getattr(doc, f.name) for f in dataclasses.fields(doc))


_PROC_FD = Path("/proc/self/fd")


def _read_inside(path: Path, max_bytes: int, root: Path) -> Document:
    """Read a file only if what is opened now still lies inside ``root``.

    The scan checked the path, but a file (or a folder above it) can be swapped for a
    symlink before the read; so the file is opened first and the check made on what was
    actually opened, which is then read through its descriptor.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise ReadError(e.strerror or str(e), transient=True) from e
    try:
        through = _PROC_FD / str(fd) if _PROC_FD.is_dir() else path
        if not Path(os.path.realpath(through)).is_relative_to(root):
            raise ReadError("refused: the path now leads outside the data folder (symlink)")
        return read_document(through, max_bytes=max_bytes, suffix=path.suffix)
    finally:
        os.close(fd)


class IsolatedReader:
    """``read_document`` in a long-lived child process with a per-file time limit.

    ``peak_memory_bytes`` is the highest peak resident memory a reader process reported
    (each answer carries it), so a caller can see what its files cost. Once ``halt`` is
    set, a read under way kills its reader and raises ``Stopped``. ``readers``: a module
    of readers the reader process adds to its registry (``extra_readers``).
    """

    def __init__(
        self,
        root: Path,
        timeout_s: float,
        memory_bytes: int | None = None,
        *,
        halt: threading.Event | None = None,
        readers: str = "",
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.timeout_s = timeout_s
        self.halt = halt
        self.readers = readers
        self.memory_bytes = memory_bytes if memory_bytes is not None else reader_memory_bytes()
        self.peak_memory_bytes = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None

    def read(self, path: Path, *, max_bytes: int) -> Document:
        conn = self._connection()
        try:
            conn.send((str(path), max_bytes, str(self.root)))
            if not self._answered(conn):
                assert self._proc is not None
                self._proc.kill()
                self._kill()
                if self.halt is not None and self.halt.is_set():
                    raise Stopped(f"reading {path.name} was stopped")
                raise ReadError(
                    f"reading took longer than {self.timeout_s:g} s; skipped (the file may "
                    "be pathological)",
                    transient=True,
                )
            peak, answer, lines = conn.recv()
        except (EOFError, OSError) as e:
            code = self._proc.poll() if self._proc is not None else None
            self._kill()
            raise ReadError(
                f"the reader process died on this file (exit code {code})", transient=True
            ) from e
        self.peak_memory_bytes = max(self.peak_memory_bytes, int(peak))
        for level, text in lines:
            reader_logger.log(level, "%s", text)
        if answer[0] == "ok":
            return Document(*answer[1:])
        raise ReadError(answer[1], transient=answer[2])

    def _answered(self, conn: Connection) -> bool:
        """Whether the reader answers within the time limit, and before a stop."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            if self.halt is None:
                return conn.poll(max(left, 0.0))
            if conn.poll(max(min(left, HALT_CHECK_S), 0.0)):
                return True
            if left <= 0 or self.halt.is_set():
                return False

    def _connection(self) -> Connection:
        if self._conn is not None and self._proc is not None and self._proc.poll() is None:
            return self._conn
        self._kill()
        ours, theirs = socket.socketpair()
        # A fresh interpreter that imports only the readers; its stdout is not ours (our
        # stdout is the MCP protocol), its log lines go to our stderr. A session of its
        # own keeps a terminal's Ctrl+C, meant for the server, from killing it mid-file.
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "micro_rag_mcp.ingest.isolation",
                str(theirs.fileno()),
                str(self.memory_bytes),
                self.readers,
            ],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        theirs.close()
        self._proc, self._conn = proc, Connection(ours.detach())
        return self._conn

    def _kill(self) -> None:
        if self._conn is not None:
            self._conn.close()  # the reader sees EOF and exits
        if self._proc is not None:
            try:
                self._proc.wait(0.5 if self._proc.poll() is None else 0)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = self._conn = None

    def close(self) -> None:
        self._kill()

    def __enter__(self) -> IsolatedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    from micro_rag_mcp.core.logfmt import log_to_stderr

    log_to_stderr("%(asctime)s %(levelname)s micro_rag_mcp.reader: %(message)s", logging.WARNING)
    _serve(Connection(int(sys.argv[1])), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
