"""Folders and index folders for tests of several modules: files written with a given
mtime, what an index holds read straight from its files, a lock held by another process."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from micro_rag_mcp.local.vectors.store import VectorStore


def vector_ids(index: Path, dimension: int = 64) -> set[int]:
    """The ids (vector keys) of the saved vector file."""
    store = VectorStore.load(index / "faiss.index", dimension)
    return {int(i) for i in store.ids()}


def chunk_keys(index: Path) -> set[int]:
    """The vector keys the catalog's chunks carry: what the saved vectors should be."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    keys = {int(r[0]) for r in conn.execute("SELECT vkey FROM chunks")}
    conn.close()
    return keys


def write(path: Path, text: str, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def catalog_rows(index: Path) -> dict[str, list[str]]:
    """path -> chunk texts, straight from the database, opened read-only: a poll that
    comes before the index never makes an empty catalog for the writer to refuse."""
    conn = sqlite3.connect(f"file:{index / 'catalog.sqlite3'}?mode=ro", uri=True)
    out: dict[str, list[str]] = {}
    for path, text in conn.execute(
        "SELECT f.path, c.text FROM chunks c JOIN files f ON f.id = c.file_id "
        "ORDER BY f.path, c.chunk_index"
    ):
        out.setdefault(path, []).append(text)
    conn.close()
    return out


def chunk_ids(index: Path) -> set[int]:
    conn = sqlite3.connect(index / "catalog.sqlite3")
    ids = {int(r[0]) for r in conn.execute("SELECT id FROM chunks")}
    conn.close()
    return ids


HOLD_LOCK = """
import os, sys
from pathlib import Path
from micro_rag_mcp.core.fsutil import LockRecord, WriterLock
from micro_rag_mcp.local.layout import ensure_folder
path = Path(sys.argv[1]); ensure_folder(path.parent)  # as a pass does before its lock
lock = WriterLock(path); lock.acquire()
lock.report(LockRecord(os.getpid(), "reading", 3, 7))
print("locked", flush=True)
sys.stdin.read()  # held until the test closes our stdin or kills us
"""


def hold_lock(path: Path) -> subprocess.Popen[bytes]:
    """Another process that holds the write lock at ``path`` (reading 3/7) until killed."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
    return holder
