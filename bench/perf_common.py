"""What the sections of ``bench.perf`` share: a row of the table, and printing it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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
