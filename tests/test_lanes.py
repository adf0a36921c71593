"""A test that starts what only the slow lane may start fails unless it is marked ``slow``."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import lanes
from tests.crashkit import Folder, kill_during_reindex
from tests.settingskit import make_settings


@contextmanager
def refused(what: str) -> Iterator[None]:
    """The block fails as an unmarked test starting ``what`` does; the offence is then
    forgotten, so that this test's own report stands."""
    with pytest.raises(pytest.fail.Exception, match=f"starts {what} but is not marked slow"):
        yield
    assert lanes.offences[-1][1] == what
    lanes.offences.clear()


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        ([sys.executable, "-m", "micro_rag_mcp", "--data-folder", "x"], "micro_rag_mcp"),
        ([sys.executable, "-m", "micro_rag_mcp.model.bert_graph", "m"], "bert_graph"),
        (["/venv/bin/micro-rag", "search", "q"], "micro-rag"),
        (["/venv/bin/milvus-lite", "server"], "milvus-lite"),
    ],
)
def test_the_server_the_cli_the_graph_builder_and_milvus_are_slow_processes(
    argv: list[str], what: str
) -> None:
    assert what in (lanes.slow_process(argv) or "")


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-m", "micro_rag_mcp.ingest.isolation", "5", "1024"],
        [sys.executable, "-c", "import sys"],
        ["git", "status"],
    ],
)
def test_the_reader_child_and_short_helpers_are_not_slow(argv: list[str]) -> None:
    assert lanes.slow_process(argv) is None


def test_starting_the_server_unmarked_fails_before_it_starts() -> None:
    with refused("a process of micro_rag_mcp"):
        subprocess.run([sys.executable, "-m", "micro_rag_mcp", "--help"], check=False)


def test_opening_the_model_weights_unmarked_fails(tmp_path: Path) -> None:
    with refused("the real model"):
        (tmp_path / lanes.MODEL_WEIGHTS).write_bytes(b"")


def test_settings_that_watch_unmarked_fail(tmp_path: Path) -> None:
    with refused("the real watcher"):
        make_settings(tmp_path, watch="poll")


def test_the_crash_harness_unmarked_fails(tmp_path: Path) -> None:
    with refused("the crash harness"):
        kill_during_reindex(Folder(tmp_path, random.Random(0)), delay=0.0)


@pytest.mark.slow
def test_a_slow_test_may_start_anything(tmp_path: Path) -> None:
    lanes.require_slow("something slow")
    (tmp_path / lanes.MODEL_WEIGHTS).write_bytes(b"")
    assert lanes.offences == []
