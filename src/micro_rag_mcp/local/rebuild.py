"""An index of another version, rebuilt beside itself while it goes on serving.

The index records the version of its format (``catalog.INDEX_VERSION``) in its catalog,
and is never migrated. A pass that finds another version (older, or newer and unknown)
builds a new index in ``rebuild/`` inside the index folder, reading every file again,
while searches go on answering from the old one; then it swaps the new one in.

A rebuild costs reading, not embedding: the new index starts from the old vector file
and the model it records, and a vector is keyed by the text it was computed from
(``vector_text.vector_key``), so a chunk whose text and model are unchanged finds its
vector there; the vectors no new chunk carries are dropped as the pass ends.

The swap, once the new index is whole: ``rebuild/swap.json`` is written (the new index is
complete and replaces the old), the vector files are moved over the old ones, and the new
catalog is copied over the old one by SQLite's backup, in one transaction: a reader of
the old catalog, in this process or another, sees the old one or the new one, never a
mix. (No open database is renamed: SQLite names a database's WAL after it, and a
connection to a renamed one can delete the WAL of the file now at its name.) Then the
marker goes, then the folder. A kill at any instant leaves the old index whole (no
marker yet, the rebuild half done) or the new one complete beside it (the marker): the
lock holder's next pass finishes the swap first, or takes the rebuild up where it
stopped (a pass resumes at any instant), or discards a rebuild that is no longer needed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sqlite3
from pathlib import Path

from micro_rag_mcp.core.fsutil import atomic_write_bytes, fsync_dir
from micro_rag_mcp.local.catalog import INDEX_VERSION, Catalog, version_of
from micro_rag_mcp.local.catalog.database import stored_meta
from micro_rag_mcp.local.catalog.schema import connect
from micro_rag_mcp.local.layout import IndexPaths

logger = logging.getLogger(__name__)

REBUILD = "rebuild"  # the folder, inside the index folder, where a new index is built
SWAP_MARKER = "swap.json"  # in it: the new index is complete and replaces the old


def beside(paths: IndexPaths) -> IndexPaths:
    """The paths of the index rebuilt beside ``paths``."""
    return IndexPaths(paths.folder / REBUILD)


def pass_target(paths: IndexPaths) -> IndexPaths:
    """The index a pass of the lock holder writes: ``paths``, or the rebuild beside it
    when its catalog is of another version. A swap a kill interrupted is finished first;
    a rebuild no longer needed, or of yet another version, is discarded."""
    finish_swap(paths)
    new = beside(paths)
    found = version_of(paths.catalog)
    if found is None or found == INDEX_VERSION:
        discard(new)
        return paths
    if version_of(new.catalog) not in (None, INDEX_VERSION):
        discard(new)
    logger.warning(
        "the index in %s is of version %s, this program writes %d: it is rebuilt beside "
        "itself and serves searches as it is until then",
        paths.folder,
        found or "unknown",
        INDEX_VERSION,
    )
    new.folder.mkdir(exist_ok=True)
    return new


def seed_vectors(old: IndexPaths, new: IndexPaths, catalog: Catalog) -> None:
    """Start a new rebuild's vectors from the old index's: its vector file (linked: a save
    replaces the file, never writes into it) and the model that made them."""
    if catalog.get_meta("vector_model") is not None or new.vectors.exists():
        return
    model = (stored_meta(old.catalog) or {}).get("vector_model")
    if model is None or not old.vectors.exists():
        return
    try:
        os.link(old.vectors, new.vectors)
    except OSError:
        shutil.copyfile(old.vectors, new.vectors)
    with catalog.transaction():
        catalog.set_meta("vector_model", model)
    logger.info("the rebuild starts from the %s vectors of the old index", model)


def swap_in(paths: IndexPaths) -> None:
    """Put the complete rebuild beside ``paths`` in its place (see the module's note).
    Every connection to the rebuild's catalog must be closed."""
    new = beside(paths)
    files = [p.name for p in (new.vectors, new.graph) if p.exists()]
    atomic_write_bytes(new.folder / SWAP_MARKER, json.dumps({"files": files}).encode())
    finish_swap(paths)


def finish_swap(paths: IndexPaths) -> bool:
    """Finish a swap whose marker is written; whether there was one. Each step may have
    been done already (a kill stopped an earlier try), and is done again or skipped."""
    new = beside(paths)
    marker = new.folder / SWAP_MARKER
    try:
        files = set(json.loads(marker.read_bytes())["files"])
    except FileNotFoundError:
        return False
    for live, built in ((paths.vectors, new.vectors), (paths.graph, new.graph)):
        if live.name not in files:
            live.unlink(missing_ok=True)
        elif built.exists():
            os.replace(built, live)
    fsync_dir(paths.folder)
    if new.catalog.exists():
        _copy_catalog(new.catalog, paths.catalog)
    marker.unlink()
    fsync_dir(new.folder)
    discard(new)
    logger.info("the rebuilt index of version %d took the old one's place", INDEX_VERSION)
    return True


def _copy_catalog(source: Path, target: Path) -> None:
    """Write ``source``'s pages over ``target``'s in one write transaction of
    ``target``: its readers see all of the old catalog or all of the new one. SQLite
    copies pages into a WAL database only of its own page size: ``source`` (no reader
    opens it) is first given ``target``'s."""
    _match_page_size(source, target)
    src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    try:
        dst = connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def _match_page_size(source: Path, target: Path) -> None:
    probe = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    try:
        wanted = int(probe.execute("PRAGMA page_size").fetchone()[0])
    finally:
        probe.close()
    conn = connect(source)
    try:
        if int(conn.execute("PRAGMA page_size").fetchone()[0]) != wanted:
            conn.execute("PRAGMA journal_mode = DELETE")  # a WAL database keeps its size
            conn.execute(f"PRAGMA page_size = {wanted}")
            conn.execute("VACUUM")
    finally:
        conn.close()


def discard(new: IndexPaths) -> None:
    """Remove a rebuild folder (one the swap no longer needs, or a stale one)."""
    if not new.folder.exists():
        return
    shutil.rmtree(new.folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        fsync_dir(new.folder.parent)
    if new.folder.exists():
        logger.warning("cannot remove %s; the next pass tries again", new.folder)


def noted_catalog(paths: IndexPaths) -> Catalog | None:
    """The catalog a watcher notes changes in for the pass that holds the index: the
    rebuild's while one is under way, else the index's (None if there is none yet).
    ``OtherVersion`` while only a catalog of another version is there: the watcher
    keeps its changes for the pass after the rebuild."""
    for target in (beside(paths).catalog, paths.catalog):
        if target.exists():
            return Catalog.open(target)
    return None
