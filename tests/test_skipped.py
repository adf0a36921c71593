"""What a scan leaves out (symlinks out of the folder, FIFOs, undecodable names) is told
by ``status`` and by every tool's ``index`` block, not only logged."""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path

import pytest
from rich.console import Console

from micro_rag_mcp.cli.output import Screens
from micro_rag_mcp.core.records import Skip, SkipGroup
from micro_rag_mcp.ingest.scanner import PathSet, ScanRules, scan
from micro_rag_mcp.ingest.skipped import MemoryMeta, record, recorded
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.serve.tool_results import search_result, wire
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings


def bad_name(folder: Path, name: bytes = b"bad\xff.txt") -> None:
    """A file whose name is not valid UTF-8."""
    fd = os.open(os.fsencode(folder) + b"/" + name, os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"text under a name no UTF-8 decoder reads")
    os.close(fd)


def odd_folder(data: Path, outside: Path) -> None:
    (data / "good.txt").write_text("An ordinary file about lighthouses.")
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the folder")
    os.symlink(outside / "secret.txt", data / "link.txt")
    os.mkfifo(data / "pipe.txt")
    os.mkfifo(data / "pipe.bin")  # not an indexed type (in any install): not a skip worth telling
    os.symlink(data / "gone.txt", data / "dangling.txt")
    os.symlink(data / "loop.txt", data / "loop.txt")
    bad_name(data)


def test_a_scan_reports_each_entry_it_leaves_out_with_its_reason(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    odd_folder(data, tmp_path / "outside")
    found = scan(ScanRules(data, (".txt",), (), frozenset()))
    assert [f.rel for f in found.files] == ["good.txt"]
    assert sorted(found.skipped, key=lambda s: s.rel) == [
        Skip("bad\\xff.txt", "name not valid UTF-8"),
        Skip("dangling.txt", "broken symlink"),
        Skip("link.txt", "symlink outside the folder"),
        Skip("loop.txt", "broken symlink"),
        Skip("pipe.txt", "not a regular file"),
    ]


def test_status_search_and_the_cli_say_what_was_skipped(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    odd_folder(data, tmp_path / "outside")
    eng = Engine(make_settings(data), FakeEmbedder)
    eng.load_model()
    try:
        eng.reindex()
        expected = (
            SkipGroup("symlink outside the folder", 1, ("link.txt",)),
            SkipGroup("broken symlink", 2, ("dangling.txt", "loop.txt")),
            SkipGroup("not a regular file", 1, ("pipe.txt",)),
            SkipGroup("name not valid UTF-8", 1, ("bad\\xff.txt",)),
        )
        summary = eng.status()
        assert summary.skipped == expected
        index = wire(search_result(eng.search("lighthouses")))["index"]
        assert index["skipped"][2] == {
            "reason": "not a regular file",
            "count": 1,
            "examples": ["pipe.txt"],
        }
    finally:
        eng.stop()
    out = io.StringIO()
    Screens(Console(file=out, width=200)).status(summary, "installed")
    line = next(s for s in out.getvalue().splitlines() if s.strip().startswith("skipped"))
    assert "1 not a regular file (pipe.txt)" in line and "bad\\xff.txt" in line
    assert Screens.status_json(summary, "installed")["skipped"][0]["reason"] == (
        "symlink outside the folder"
    )


def test_the_examples_are_bounded_and_the_count_is_not(tmp_path: Path) -> None:
    for n in range(8):
        os.mkfifo(tmp_path / f"p{n}.txt")
    meta = MemoryMeta()
    record(meta, scan(ScanRules(tmp_path, (".txt",), (), frozenset())).skipped, None)
    (group,) = recorded(meta)
    assert (group.count, group.examples) == (8, ("p0.txt", "p1.txt", "p2.txt", "p3.txt", "p4.txt"))


def test_a_pass_over_part_of_the_folder_replaces_only_its_part() -> None:
    meta = MemoryMeta()
    record(
        meta, [Skip("a/x.txt", "not a regular file"), Skip("b/y.txt", "not a regular file")], None
    )
    record(meta, [], PathSet(["a"]))  # a/x.txt became a file
    record(meta, [Skip("c/z.txt", "symlink outside the folder")], PathSet(["c/z.txt"]))
    assert recorded(meta) == (
        SkipGroup("symlink outside the folder", 1, ("c/z.txt",)),
        SkipGroup("not a regular file", 1, ("b/y.txt",)),
    )


@pytest.mark.slow  # over a second: kept out of the fast lane
def test_an_entry_is_logged_by_the_first_pass_that_skips_it_only(
    data: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad_name(data)
    (data / "good.txt").write_text("An ordinary file.")
    eng = Engine(make_settings(data), FakeEmbedder)
    eng.load_model()
    try:
        with caplog.at_level(logging.INFO, logger="micro_rag_mcp"):
            for _ in range(3):
                eng.reindex()
            eng.refresh(None)
            os.mkfifo(data / "pipe.txt")
            eng.refresh(["pipe.txt"])
            eng.refresh(["pipe.txt"])
    finally:
        eng.stop()
    skips = [r.getMessage() for r in caplog.records if r.getMessage().startswith("skipping")]
    assert skips == [
        "skipping bad\\xff.txt: name not valid UTF-8",
        "skipping pipe.txt: not a regular file",
    ]
