"""How far a reindex pass is, how fast it goes and how long it has left, for people.

The server logs a line of it every 10 s of a long pass; the command line prints the same
line when it writes to a file or a pipe instead of a terminal.

While one file takes long to read (``SLOW_READ_S`` and more: a scan under OCR, a large
PDF), the rate and the time left say nothing (no file ends, so the rate is that of the
files before it, and the time left stands still): the line names the file and how long
it has been read instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from micro_rag_mcp.core.results import Progress

_UNITS = {"reading": "files", "embedding": "chunks"}
SLOW_READ_S = 3.0


class Pace:
    """Follows one pass: files read, chunks embedded, and the current phase's rate."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._since = clock()  # when the current phase began (the previous one's last news)
        self._last_news = self._since
        self.current: Progress | None = None
        self.files: tuple[int, int] | None = None  # files read, of how many
        self._read: tuple[str, float] | None = None  # the file being read, since when

    def update(self, p: Progress) -> None:
        now = self._clock()
        before = self.current
        if before is not None and (p.phase != before.phase or p.done < before.done):
            self._since = self._last_news
        if p.phase == "reading":
            self.files = (p.done, p.total)
        if p.reading:  # the same news may come again (with another embedded count)
            if self._read is None or self._read[0] != p.reading:
                self._read = (p.reading, now)
        elif p.phase != "reading" or before is None or p.done != before.done:
            self._read = None  # a file ended (embedding news comes between reads too)
        self.current, self._last_news = p, now

    def slow_read(self) -> tuple[str, float] | None:
        """The file being read and for how many seconds, once that is ``SLOW_READ_S``."""
        if self._read is None:
            return None
        name, since = self._read
        seconds = self._clock() - since
        return (name, seconds) if seconds >= SLOW_READ_S else None

    def rate(self) -> float | None:
        """Items of the current phase per second, since the phase began."""
        p = self.current
        elapsed = self._last_news - self._since
        if p is None or p.done <= 0 or elapsed <= 0:
            return None
        return p.done / elapsed

    def seconds_left(self) -> float | None:
        """Time left in the current phase at its rate so far (embedding comes after reading)."""
        rate, p = self.rate(), self.current
        return None if rate is None or p is None else max(0, p.total - p.done) / rate

    def line(self) -> str:
        """``embedding chunks: 1200 of 11640 (40.1/s, about 4 min left); 5183 files read``,
        or ``reading files: 5183 of 9000 (...); 1200 chunks embedded``"""
        p = self.current
        if p is None:
            return "starting"
        unit = _UNITS.get(p.phase, "items")
        words = f"{p.phase} {unit}: {p.done} of {p.total}"
        rate, left, slow = self.rate(), self.seconds_left(), self.slow_read()
        if slow is not None and p.phase == "reading":
            words += f" (reading {slow[0]} for {duration(slow[1])})"
        elif rate is not None and left is not None and p.done < p.total:
            words += f" ({rate:.3g} {unit}/s, about {duration(left)} left)"
        if p.phase != "reading" and self.files is not None:
            words += f"; {self.files[0]} files read"
        elif p.phase == "reading" and p.embedded:
            words += f"; {p.embedded} chunks embedded"  # embedding runs while files are read
        return words


def duration(seconds: float) -> str:
    """``40 s``, ``6 min``, ``1 h 20 min``: rounded as an estimate deserves."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


class ProgressLog:
    """Hands ``emit`` a progress line at most every ``every_s`` seconds of a pass.

    A pass shorter than ``every_s`` says nothing.
    """

    def __init__(
        self,
        emit: Callable[[str], None],
        every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pace = Pace(clock)
        self._emit = emit
        self._every_s = every_s
        self._clock = clock
        self._last = clock()

    def __call__(self, p: Progress) -> None:
        self.pace.update(p)
        now = self._clock()
        if now - self._last >= self._every_s:
            self._last = now
            self._emit(self.pace.line())
