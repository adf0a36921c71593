"""Progress a person can follow: rate and time left, every so often, never too often."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from micro_rag_mcp.core.pace import ProgressLog, duration
from micro_rag_mcp.core.results import Progress
from micro_rag_mcp.local.engine import Engine


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_line_every_ten_seconds_with_rate_and_time_left() -> None:
    clock, lines = Clock(), []
    log = ProgressLog(lines.append, 10.0, clock)
    for done in range(1, 11):  # 10 files, one a second
        clock.now += 1
        log(Progress("reading", done, 10))
    assert lines == ["reading files: 10 of 10"]
    for done in range(20, 201, 20):  # then 200 chunks, 20 every 2 s: 10 a second
        clock.now += 2
        log(Progress("embedding", done, 1000))
    assert lines[1:] == [  # at most one line in each 10 s
        "embedding chunks: 100 of 1000 (10 chunks/s, about 2 min left); 10 files read",
        "embedding chunks: 200 of 1000 (10 chunks/s, about 1 min left); 10 files read",
    ]


def test_a_short_pass_says_nothing() -> None:
    clock, lines = Clock(), []
    log = ProgressLog(lines.append, 10.0, clock)
    for done in range(1, 4):
        clock.now += 0.5
        log(Progress("reading", done, 3))
    assert lines == []


@pytest.mark.parametrize(
    ("seconds", "words"), [(0.2, "1 s"), (42, "42 s"), (125, "2 min"), (4800, "1 h 20 min")]
)
def test_durations_read_as_estimates(seconds: float, words: str) -> None:
    assert duration(seconds) == words


def test_the_server_logs_a_long_pass_at_info(
    engine: Engine, data: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for i in range(3):
        (data / f"n{i}.txt").write_text(f"Note {i}.")
    engine._writer.log_every_s = 0.0  # every step of this short pass is "long"
    with caplog.at_level(logging.INFO, logger="micro_rag_mcp.local.passes.writer"):
        engine.reindex()
    lines = [
        r.getMessage() for r in caplog.records if r.name == "micro_rag_mcp.local.passes.writer"
    ]
    assert "reading files: 3 of 3" in lines
    assert any(line.startswith("embedding chunks: 3 of 3; 3 files read") for line in lines)


def test_while_reading_the_line_tells_the_chunks_embedded_meanwhile() -> None:
    clock, lines = Clock(), []
    log = ProgressLog(lines.append, 10.0, clock)
    clock.now += 20
    log(Progress("reading", 50, 100, embedded=320))
    assert lines == ["reading files: 50 of 100 (2.5 files/s, about 20 s left); 320 chunks embedded"]


def test_a_file_slow_to_read_is_named_instead_of_a_rate_and_time_left() -> None:
    clock, lines = Clock(), []
    log = ProgressLog(lines.append, 10.0, clock)
    for done in range(1, 4):
        clock.now += 1
        log(Progress("reading", done, 10))
    log(Progress("reading", 3, 10, reading="scans/big.pdf"))
    clock.now += 40
    log(Progress("reading", 3, 10, reading="scans/big.pdf", embedded=5))  # the same news again
    assert lines == ["reading files: 3 of 10 (reading scans/big.pdf for 40 s); 5 chunks embedded"]
    clock.now += 11
    log(Progress("reading", 4, 10))  # it ended: a rate again
    assert lines[-1].startswith("reading files: 4 of 10 (0.0741 files/s, about")
