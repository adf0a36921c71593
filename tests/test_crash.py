"""SIGKILL a reindex at random instants while files change: the index always survives."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crashkit import check, populate, run_kills, run_rebuild_kills

pytestmark = pytest.mark.slow


def test_reindex_killed_at_random_instants_leaves_an_index_that_opens_and_converges(
    tmp_path: Path,
) -> None:
    killed, failures, reasons = run_kills(tmp_path / "docs", instants=15, seed=20261130)
    assert failures == 0, "\n".join(reasons)
    assert killed >= 7, f"only {killed} of 15 runs were killed before finishing"


def test_a_kill_before_the_index_folder_was_marked_leaves_a_folder_the_next_pass_takes(
    tmp_path: Path,
) -> None:
    # The writer makes the index folder, then writes its marker: a kill between the two
    # leaves an empty folder, which must not read as someone else's files.
    folder = populate(tmp_path / "docs", seed=7)
    (folder.root / "index").mkdir()
    verdict = check(folder)
    assert verdict.ok, verdict


def test_a_rebuild_killed_at_random_instants_leaves_an_index_that_opens_and_converges(
    tmp_path: Path,
) -> None:
    killed, failures, reasons = run_rebuild_kills(tmp_path / "docs", instants=12, seed=20261204)
    assert failures == 0, "\n".join(reasons)
    assert killed >= 6, f"only {killed} of 12 runs were killed before finishing"
