"""How far a pass is, told as one ``Progress`` while two threads work: the reading
thread's files while it reads, then the chunks embedded of those to embed. Every count
reaches the callback in order, from the pass's own thread."""

from __future__ import annotations

import threading
from dataclasses import replace

from micro_rag_mcp.core.errors import Stopped
from micro_rag_mcp.core.results import Progress, ProgressFn


class Tally:
    """How far both threads are, as one ``Progress``: files while reading, then chunks."""

    def __init__(
        self, progress: ProgressFn, stop: threading.Event, live: ProgressFn | None = None
    ) -> None:
        self._progress = progress
        self._live = live  # hears every change at once, from either thread (read_and_embed)
        self.stop = stop
        self._lock = threading.Lock()
        self.reading: Progress | None = None
        self.embedded = 0
        self.to_embed: int | None = None  # known once reading has ended
        self._told: Progress | None = None  # the last reading progress handed on

    def read(self, p: Progress) -> None:
        with self._lock:
            self.reading = p
            current = self._current()
            if self._live is not None and current is not None:
                self._live(current)

    def _current(self) -> Progress | None:
        if self.to_embed:  # reading has ended, and chunks were or are to be embedded
            return Progress("embedding", self.embedded, self.to_embed)
        if self.reading is not None:
            return replace(self.reading, embedded=self.embedded)
        return None

    def publish(self) -> None:
        """Hand the callback the current progress (only from the pass's own thread: a
        client's callback may need its thread); it raises Stopped to stop the pass."""
        if self.stop.is_set():
            raise Stopped("the server is stopping")
        with self._lock:
            p = self._current()
            if p is None:
                return
            steps = [p]
            last = self.reading
            if p.phase != "reading" and last is not None and last is not self._told:
                # Reading ended between two calls: its last count is told first, so the
                # callback hears every file read (its lines say "3 files read", not 2).
                steps.insert(0, replace(last, embedded=self.embedded))
            self._told = last
            if self._live is not None:
                self._live(p)
        for step in steps:
            self._progress(step)
