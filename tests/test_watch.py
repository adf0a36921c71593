"""The index follows the folder: the real watcher on real folders, with the fake embedder.

Every change is waited for by polling ``search`` with a deadline; nothing here sleeps a
fixed time to let the watcher catch up.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from micro_rag_mcp.core.fsutil import network_fs
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.watch.changes import ChangeFilter, ChangeQueue
from micro_rag_mcp.local.watch.watcher import STANDBY, STARTING, WATCHED_ELSEWHERE, WATCHING
from tests.fakes import FakeEmbedder
from tests.indexkit import catalog_rows, write
from tests.mcpkit import stdio_params, wait_complete
from tests.settingskit import make_settings
from tests.waiting import eventually, until

pytestmark = pytest.mark.slow


def paths_for(engine: Engine, query: str) -> list[str]:
    """The files whose indexed text has the query's words (the fake embedder's hashed
    vectors can match anything a little, so the vector channel is left out)."""
    hits = engine.search(query, top_k=10).hits
    return [h.chunk.path for h in hits if "keyword" in h.channels]


@contextmanager
def following(data: Path, **kw: object) -> Iterator[Engine]:
    """An engine started on ``data`` with its watcher on, once it watches and is idle."""
    kw.setdefault("watch", "auto")
    eng = Engine(make_settings(data, **kw), FakeEmbedder)
    eng.load_model()
    eng.start()
    try:
        eventually(lambda: eng.state().watch not in ("off", STARTING), "the watcher is set up")
        # The start-up pass creates the catalog, and runs until it is done.
        started = eng.paths.catalog.exists
        eventually(lambda: started() and not eng.state().indexing, "the start-up pass is done")
        yield eng
    finally:
        eng.stop()


def test_new_modified_and_deleted_files_are_followed(data: Path) -> None:
    write(data / "old.txt", "The lighthouse keeper logs every passing ship.")
    with following(data) as eng:
        assert eng.state().watch == WATCHING
        assert paths_for(eng, "lighthouse keeper") == ["old.txt"]

        write(data / "notes" / "new.md", "# Orchard\n\nQuinces ripen late in autumn.")
        eventually(lambda: paths_for(eng, "quinces") == ["notes/new.md"], "a new file")

        write(data / "old.txt", "The harbour master counts the fishing boats.")
        eventually(lambda: paths_for(eng, "harbour master") == ["old.txt"], "a modified file")
        assert paths_for(eng, "lighthouse keeper") == []

        (data / "notes" / "new.md").unlink()
        eventually(lambda: paths_for(eng, "quinces") == [], "a deleted file")
        eventually(lambda: eng.state().queued == 0, "nothing left queued")
    assert catalog_rows(data / "index") == {
        "old.txt": ["The harbour master counts the fishing boats."]
    }


def test_an_atomic_save_and_a_rename_are_followed(data: Path) -> None:
    write(data / "draft.md", "Saffron comes from the crocus flower.")
    with following(data) as eng:
        temp = data / ".draft.md.swp"  # an editor writes a hidden temporary, then renames it
        temp.write_text("Vanilla comes from an orchid.")
        os.replace(temp, data / "draft.md")
        eventually(lambda: paths_for(eng, "vanilla orchid") == ["draft.md"], "an atomic save")
        assert paths_for(eng, "saffron crocus") == []

        os.rename(data / "draft.md", data / "final.md")
        eventually(lambda: paths_for(eng, "vanilla orchid") == ["final.md"], "a renamed file")
    assert catalog_rows(data / "index") == {"final.md": ["Vanilla comes from an orchid."]}


def test_folders_moved_in_renamed_and_deleted_are_followed(data: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "sub" / "glacier.txt", "Glaciers carve valleys into the shape of a U.")
    write(outside / "dune.md", "Dunes migrate with the prevailing wind.")
    with following(data) as eng:
        os.rename(outside, data / "geo")  # a folder arrives with its files already inside
        eventually(lambda: paths_for(eng, "glaciers valleys") == ["geo/sub/glacier.txt"], "in")
        # Each file of the folder is its own event: the second may land a moment later.
        eventually(lambda: paths_for(eng, "dunes wind") == ["geo/dune.md"], "in, the other")

        os.rename(data / "geo", data / "earth")
        eventually(lambda: paths_for(eng, "dunes wind") == ["earth/dune.md"], "a renamed folder")
        eventually(
            lambda: paths_for(eng, "glaciers valleys") == ["earth/sub/glacier.txt"],
            "a renamed folder, the other file",
        )

        shutil.rmtree(data / "earth" / "sub")
        eventually(lambda: paths_for(eng, "glaciers valleys") == [], "a deleted folder")
    assert set(catalog_rows(data / "index")) == {"earth/dune.md"}


def test_a_file_written_in_pieces_is_indexed_whole(data: Path) -> None:
    pieces = [f"Piece {i} names the comet number {1000 + i}.\n" for i in range(6)]
    with following(data) as eng:
        with open(data / "log.txt", "w", encoding="utf-8") as f:
            for i, piece in enumerate(pieces):  # the file grows while it is watched:
                f.write(piece)
                f.flush()
                # the next piece comes once the watcher has indexed this one
                number = str(1000 + i)
                eventually(lambda n=number: paths_for(eng, n) == ["log.txt"], f"piece {i}")
        eventually(lambda: eng.state().queued == 0, "nothing left queued")
    assert catalog_rows(data / "index") == {"log.txt": ["".join(pieces).strip()]}


def test_changes_that_cannot_matter_trigger_no_work(
    data: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="micro_rag_mcp.local.watch.watcher")
    write(data / ".gitignore", "logs/\n")
    with following(data) as eng:
        write(data / "logs" / "app.txt", "An ignored folder is never indexed.")
        write(data / ".git" / "notes.txt", "Hidden folders are never indexed.")
        write(data / ".hidden.md", "Hidden files are never indexed.")
        write(data / "node_modules" / "pkg" / "readme.md", "Skipped folders neither.")
        write(data / "build.log", "Other suffixes neither.")
        write(data / "index" / "stray.txt", "Nor the index folder.")
        write(data / "sentinel.txt", "The sentinel arrives last.")

        def refreshed() -> list[str]:
            messages = [r.getMessage() for r in caplog.records]
            return [m for m in messages if m.startswith("refreshed")]

        eventually(lambda: bool(refreshed()), "a refresh, for the sentinel")
        assert paths_for(eng, "sentinel") == ["sentinel.txt"]
    assert all(m.startswith("refreshed sentinel.txt:") for m in refreshed()), refreshed()


def test_forced_polling_picks_up_changes(data: Path) -> None:
    with following(data, watch="poll", poll_interval_s=1.0) as eng:
        assert eng.state().watch == "polling every 1 s"
        write(data / "tide.txt", "Spring tides follow the full moon.")
        eventually(lambda: paths_for(eng, "spring tides") == ["tide.txt"], "a polled new file")
        (data / "tide.txt").unlink()
        eventually(lambda: paths_for(eng, "spring tides") == [], "a polled deletion")


def test_a_folder_that_disappears_falls_back_to_polling(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    write(data / "a.txt", "Basalt columns form as lava cools.")
    settings = make_settings(data, watch="auto", poll_interval_s=1.0)
    eng = Engine(replace(settings, index_folder=tmp_path / "index"), FakeEmbedder)
    eng.load_model()
    eng.start()
    try:
        eventually(lambda: eng.state().watch == WATCHING, "watching")
        eventually(lambda: paths_for(eng, "basalt lava") == ["a.txt"], "the start-up pass")
        shutil.rmtree(data)
        eventually(lambda: eng.state().watch == "polling every 1 s", "the fallback")
        assert paths_for(eng, "basalt lava") == ["a.txt"]  # not taken for deleted
        write(data / "b.txt", "Obsidian is volcanic glass.")
        eventually(lambda: paths_for(eng, "obsidian glass") == ["b.txt"], "found by polling")
    finally:
        eng.stop()


def test_one_watcher_per_folder_and_the_other_takes_over(data: Path) -> None:
    with following(data) as first:
        second = Engine(make_settings(data, watch="auto"), FakeEmbedder)
        second.load_model()
        second.start()
        try:
            eventually(lambda: second.state().watch == STANDBY, "the second stands by")
            assert first.state().watch == WATCHING
            write(data / "a.txt", "Narwhals have a single long tusk.")
            eventually(lambda: paths_for(second, "narwhals") == ["a.txt"], "the first indexes")
            first.stop()
            eventually(lambda: second.state().watch == WATCHING, "the second takes over")
            write(data / "b.txt", "Walruses haul out on sea ice.")
            eventually(lambda: paths_for(second, "walruses") == ["b.txt"], "the second indexes")
        finally:
            second.stop()


def test_a_watcher_setting_up_says_starting_never_that_another_process_watches(
    data: Path,
) -> None:
    eng = Engine(make_settings(data, watch="auto"), FakeEmbedder)
    eng.load_model()
    seen: list[str] = []
    eng.start()
    try:

        def watching() -> bool:
            seen.append(eng.state().watch)
            return seen[-1] == WATCHING

        eventually(watching, "the watcher watches")
    finally:
        eng.stop()
    # Its own watch lock, taken before the watch is set up, is not another process's.
    assert set(seen) <= {STARTING, WATCHING}, seen


def test_a_process_that_does_not_watch_says_whether_another_does(data: Path) -> None:
    unwatched = Engine(make_settings(data, watch="off"), FakeEmbedder)
    unwatched.load_model()
    assert unwatched.state().watch == "off"
    write(data / "a.txt", "Gannets plunge from thirty metres.", mtime=1e9)
    # A poll that never comes: the change stays unseen by the watcher while we look.
    with following(data, watch="poll", poll_interval_s=3600.0) as watcher:
        assert watcher.state().watch.startswith("polling")
        assert unwatched.state().watch == WATCHED_ELSEWHERE
        write(data / "a.txt", "Gannets plunge, then swim after fish.", mtime=1e9 + 5)
        out = unwatched.search("gannets")
        [notice] = [n for n in out.notices if "stale" in n]
        assert "the process that watches this folder will reindex it" in notice
    assert unwatched.state().watch == "off"
    unwatched.stop()


def test_a_stale_hit_is_flagged_and_said_in_words(engine: Engine, data: Path) -> None:
    write(data / "a.txt", "Kestrels hover before they dive.", mtime=1e9)
    write(data / "b.txt", "Kestrels nest on cliffs.", mtime=1e9)
    engine.reindex()
    fresh = engine.search("kestrels")
    assert {h.chunk.path: h.stale for h in fresh.hits} == {"a.txt": False, "b.txt": False}
    assert not any("stale" in n for n in fresh.notices)

    write(data / "a.txt", "Kestrels hover, then they stoop on voles.", mtime=1e9 + 5)
    (data / "b.txt").unlink()
    out = engine.search("kestrels")
    assert {h.chunk.path: h.stale for h in out.hits} == {"a.txt": True, "b.txt": True}
    [notice] = [n for n in out.notices if "stale" in n]
    assert "a.txt, b.txt" in notice and "reindex them" in notice
    assert out.state.watch == "off" and out.state.queued == 0


def test_a_stale_hit_is_queued_when_the_folder_is_followed(data: Path) -> None:
    write(data / "a.txt", "Puffins dive for sand eels.", mtime=1e9)
    with following(data, watch="poll", poll_interval_s=3600.0) as eng:
        assert paths_for(eng, "puffins") == ["a.txt"]
        write(data / "a.txt", "Puffins dig burrows on grassy slopes.", mtime=1e9 + 5)
        out = eng.search("puffins")
        assert [(h.chunk.path, h.stale) for h in out.hits] == [("a.txt", True)]
        assert any("being reindexed" in n for n in out.notices), out.notices
        eventually(lambda: paths_for(eng, "burrows") == ["a.txt"], "the queued refresh")
        assert [h.stale for h in eng.search("puffins").hits] == [False]


def test_the_change_queue_waits_for_quiet_and_for_a_file_to_settle(tmp_path: Path) -> None:
    queue = ChangeQueue(tmp_path, quiet_s=1.0, max_wait_s=10.0)
    write(tmp_path / "done.txt", "finished long ago", mtime=1e9)
    # An mtime in the future is young whatever the machine's speed: it settles only by
    # keeping the same size and mtime for a quiet period of the queue's own clock.
    ahead = time.time() + 3600
    growing = write(tmp_path / "growing.txt", "still being written", mtime=ahead)
    queue.add(["done.txt", "growing.txt", "gone.txt"], now=100.0)
    assert queue.take(100.5) is None  # not quiet yet
    batch = queue.take(101.0)
    assert batch is not None and batch.paths == {"done.txt", "gone.txt"}
    assert len(queue) == 1  # growing.txt waits: its mtime is younger than the quiet period
    with growing.open("a") as f:
        f.write(" and more")
    os.utime(growing, (ahead + 1, ahead + 1))
    assert queue.take(101.5) is None  # it moved since it was last looked at
    assert queue.take(102.0) is None
    batch = queue.take(102.6)  # unchanged for a quiet period
    assert batch is not None and batch.paths == {"growing.txt"} and len(queue) == 0


def test_the_change_filter_ignores_what_cannot_matter(data: Path) -> None:
    root = Path(os.path.realpath(data))
    changes = ChangeFilter(make_settings(data), root)
    assert changes.relative(f"{root}/notes/a.md") == "notes/a.md"
    for ignored in [".git/x.txt", "a/.hidden.md", "node_modules/x.md", "index/catalog.sqlite3"]:
        assert changes.relative(f"{root}/{ignored}") is None, ignored
    assert changes.relative(str(root)) is None
    assert changes.relative(f"{root}-other/a.md") is None
    assert changes.indexable_name("a/b.PDF") and not changes.indexable_name("a/b.log")


def test_paths_the_scan_leaves_out_cause_no_work(data: Path) -> None:
    root = Path(os.path.realpath(data))
    write(data / ".gitignore", "logs/\n*.tmp.md\n")
    write(data / "sub" / ".ignore", "private.md\n")
    write(data / "venv" / "pyvenv.cfg", "home = /usr/bin\n")
    changes = ChangeFilter(make_settings(data, exclude=("drafts/",)), root)
    for rel in ["logs/app.txt", "a/x.tmp.md", "sub/private.md", "venv/lib/readme.md"]:
        assert changes.left_out(rel, False), rel
    assert changes.left_out("drafts", True) and changes.left_out("drafts/d.md", False)
    for rel in ["notes/a.md", "sub/public.md", "private.md", "logsbook.txt"]:
        assert not changes.left_out(rel, False), rel


def test_network_file_systems_are_recognised_from_the_mount_table() -> None:
    mounts = (
        "/dev/sda1 / ext4 rw 0 0\n"
        "server:/export /mnt/team\\040docs nfs4 rw 0 0\n"
        "tmpfs /mnt/team\\040docs/tmp tmpfs rw 0 0\n"
    )
    assert network_fs(Path("/mnt/team docs/reports"), mounts) == "nfs4"
    assert network_fs(Path("/mnt/team docs/tmp/x"), mounts) is None
    assert network_fs(Path("/home/me/notes"), mounts) is None


def test_the_server_over_stdio_finds_a_file_written_after_it_started(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    write(data / "seed.md", "# Seeds\n\nSunflower seeds are rich in oil.")

    async def main() -> None:
        async with Client(stdio_params(data)) as client:
            index = await wait_complete(client)
            assert index["watch"] == "watching" and index["files_indexed"] == 1
            write(data / "later" / "comet.txt", "Halley's comet returns every 76 years.")
            found: list[dict[str, Any]] = []

            async def comet_first() -> bool:
                out = await client.call_tool("search", {"query": "Halley comet"})
                found[:] = out.structured_content["results"]  # type: ignore[index]
                return bool(found) and found[0]["path"] == "later/comet.txt"

            await until(comet_first, lambda: f"never found: {found}", interval=0.1)
            assert found[0]["stale"] is False
            index = await wait_complete(client)
            assert index["files_indexed"] == 2 and index["queued"] == 0

    anyio.run(main)


def test_a_name_that_is_not_utf8_keeps_the_folder_watched_and_is_logged_once(
    data: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(data / "old.txt", "The lighthouse keeper logs every passing ship.")
    with caplog.at_level(logging.INFO, logger="micro_rag_mcp"), following(data) as eng:
        fd = os.open(os.fsencode(data) + b"/bad\xff.txt", os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"text under a name no UTF-8 decoder reads")
        os.close(fd)
        eventually(lambda: bool(eng.state().skipped), "the undecodable name is seen")
        write(data / "new.md", "Quinces ripen late in autumn.")
        eventually(lambda: paths_for(eng, "quinces") == ["new.md"], "a file made after it")
        fd = os.open(os.fsencode(data) + b"/bad\xff.txt", os.O_WRONLY | os.O_APPEND)
        os.write(fd, b" and more of it")
        os.close(fd)
        write(data / "other.md", "Medlars are eaten half rotten.")
        eventually(lambda: paths_for(eng, "medlars") == ["other.md"], "a file made after that")
        assert eng.state().watch == WATCHING
    skips = [r.getMessage() for r in caplog.records if "not valid UTF-8" in r.getMessage()]
    assert skips == ["skipping bad\\xff.txt: name not valid UTF-8"]
