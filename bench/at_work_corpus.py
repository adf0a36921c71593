"""The folders ``bench.at_work`` runs on, and the copy of a complete index each section
but the first starts from.

A corpus lives in ``<work>/<name>``: ``source`` (the folder as generated or copied, with
the benchmark's probe files), ``docs`` and ``index`` (what the server runs on), and
``snapshot`` (``docs`` and ``index`` once the first index completed). Copies keep the
files' modification times, so a server started on a restored copy finds nothing changed.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

from bench.at_work_session import Server, Stalled, State, serve
from bench.at_work_watch import probe_text, top1
from bench.incident_notes import identifier_queries, make_notes, write_notes

logger = logging.getLogger("bench")

SETTLE_S = 3600.0  # the longest wait for an index to become complete


@dataclass(frozen=True)
class Corpus:
    name: str
    root: Path
    queries: list[tuple[str, str]]  # (identifier query, the path that holds it)
    move: str  # the subfolder the move section renames
    chunks_hint: int  # chunks expected (0: unknown until indexed)
    precision: str

    @property
    def docs(self) -> Path:
        return self.root / "docs"

    @property
    def index(self) -> Path:
        return self.root / "index"

    @property
    def source(self) -> Path:
        return self.root / "source"

    @property
    def snapshot(self) -> Path:
        return self.root / "snapshot"

    def serve(self) -> AbstractAsyncContextManager[Server]:
        return serve(self.docs, self.index, self.precision, self.root / "server.log")

    def snapshot_probes(self) -> list[str]:
        """The probe files of the snapshot's folder (top level), which the index holds."""
        return sorted(p.name for p in (self.snapshot / "docs").glob("probe-*.txt"))


def copy_folder(src: Path, dst: Path) -> None:
    """Replace ``dst`` by a writable copy of ``src`` that keeps modification times."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, symlinks=True)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            path = os.path.join(root, name)
            os.chmod(path, os.lstat(path).st_mode | 0o200)
    os.chmod(dst, os.lstat(dst).st_mode | 0o200)


def _seed_probes(folder: Path, move: str, changes: int) -> None:
    """Probe files to delete during the first index, and one in the folder to be moved."""
    for i in range(changes):
        (folder / f"probe-firstd{i:02d}.txt").write_text(probe_text(f"firstd{i:02d}"))
    (folder / move / "probe-move.txt").write_text(probe_text("move"))


def _fresh(root: Path, stamp: str) -> bool:
    """Whether ``root`` was made for ``stamp``; if not it is emptied (and stamped later)."""
    if (root / "stamp").exists() and (root / "stamp").read_text() == stamp:
        return False
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    return True


def notes_corpus(work: Path, count: int, changes: int, precision: str) -> Corpus:
    notes = make_notes(count)
    root = work / f"notes-{count}"
    c = Corpus("notes", root, identifier_queries(notes), "payments", count + changes, precision)
    stamp = json.dumps({"notes": count, "changes": changes, "precision": precision})
    if _fresh(root, stamp):
        write_notes(c.source, notes)
        _seed_probes(c.source, c.move, changes)
        (root / "stamp").write_text(stamp)
    return c


def realdocs_corpus(work: Path, folder: Path, changes: int, precision: str) -> Corpus:
    if not folder.is_dir():
        raise SystemExit(f"--realdocs {folder}: not a folder")
    root = work / "realdocs"
    subfolders = sorted(p.name for p in folder.iterdir() if p.is_dir())
    if not subfolders:
        raise SystemExit(f"--realdocs {folder}: no subfolder to move")
    c = Corpus("realdocs", root, [], subfolders[0], 0, precision)
    stamp = json.dumps({"realdocs": str(folder.resolve()), "changes": changes, "p": precision})
    if _fresh(root, stamp):
        copy_folder(folder, c.source)
        _seed_probes(c.source, c.move, changes)
        (root / "stamp").write_text(stamp)
    return c


def restore(c: Corpus) -> None:
    copy_folder(c.snapshot / "docs", c.docs)
    copy_folder(c.snapshot / "index", c.index)


async def settle(c: Corpus) -> tuple[State, int]:
    """Bring the index to complete (starting a server again while a pass gives up), copy
    the folder and the index to the snapshot; the state then, and how many identifier
    queries rank their file first."""
    for _ in range(3):
        async with c.serve() as server:
            try:
                state = await server.wait_idle(SETTLE_S)
            except Stalled as e:
                logger.info("%s: %s; starting the server again", c.name, e)
                continue
            first, _ = await top1(server, c.queries)
        new = c.root / "snapshot.new"
        copy_folder(c.docs, new / "docs")
        copy_folder(c.index, new / "index")
        shutil.rmtree(c.snapshot, ignore_errors=True)
        new.rename(c.snapshot)
        return state, first
    raise RuntimeError(f"{c.name}: the index never became complete")


async def ensure_snapshot(c: Corpus) -> None:
    if (c.snapshot / "index").exists():
        return
    logger.info("%s: indexing the folder once for the snapshot", c.name)
    copy_folder(c.source, c.docs)
    shutil.rmtree(c.index, ignore_errors=True)
    await settle(c)
