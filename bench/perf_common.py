"""What the sections of ``bench.perf`` share: a row of the table, printing it, and
measuring a process's peak memory."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import numpy as np


@dataclass(frozen=True)
class Row:
    section: str
    measure: str  # what, on what: "search p50, 100k chunks, exact"
    value: str  # formatted, with its unit: "12.3 ms"
    target: str = ""  # the target, if any: "<= 20 ms"
    note: str = ""  # "synthetic text and vectors", a ratio, a caveat


def print_table(rows: Iterable[Row]) -> None:
    print("| section | measure | value | target | note |")
    print("| --- | --- | ---: | --- | --- |")
    for r in rows:
        print(f"| {r.section} | {r.measure} | {r.value} | {r.target} | {r.note} |")


def percentiles_ms(seconds: Sequence[float]) -> tuple[float, float]:
    """p50 and p99 of durations given in seconds, in milliseconds."""
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def peak_rss_mb(pid: int | str = "self") -> float:
    """A process's peak RSS (``VmHWM``), in MB; 0 if it has ended.

    Not ``ru_maxrss``: on Linux a process started from another carries its starter's peak
    into its own ``ru_maxrss`` (the kernel keeps the larger of the two across ``exec``),
    so a measurement child of a large benchmark process would report the benchmark's
    peak. ``VmHWM`` belongs to the process's own memory, fresh at ``exec``.
    """
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def child_pids(pid: int | str = "self") -> list[int]:
    """The processes ``pid``'s threads started that still run (Linux)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                text = Path(f"/proc/{pid}/task/{task}/children").read_text()
                found += [int(c) for c in text.split()]
    return found


class ChildrenPeak:
    """The largest peak RSS of this process's children while the block runs, in MB.

    A child's peak is read from outside every ``every_s`` while it runs (``VmHWM`` only
    grows), and once more as the block ends: a child that lives less than ``every_s``
    may be missed, one that grows in its last ``every_s`` is read a little low.
    """

    def __init__(self, every_s: float = 0.05) -> None:
        self.mb = 0.0
        self._every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> ChildrenPeak:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        self._read()
        while not self._stop.wait(self._every_s):
            self._read()
        self._read()

    def _read(self) -> None:
        for child in child_pids():
            self.mb = max(self.mb, peak_rss_mb(child))
