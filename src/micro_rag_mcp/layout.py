"""The index folder: its file names, its version, and recovery from a damaged catalog."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from micro_rag_mcp.catalog import MIGRATES_FROM, SCHEMA_VERSION, Catalog, CatalogCorrupt
from micro_rag_mcp.errors import IndexWriteError
from micro_rag_mcp.fsutil import atomic_write_bytes, fsync_dir

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class IndexPaths:
    folder: Path

    @property
    def catalog(self) -> Path:
        return self.folder / "catalog.sqlite3"

    @property
    def vectors(self) -> Path:
        return self.folder / "faiss.index"

    @property
    def graph(self) -> Path:
        """The approximate search graph of a large folder (derived from ``vectors``)."""
        return self.folder / "hnsw.index"

    @property
    def version(self) -> Path:
        return self.folder / "version"

    @property
    def lock(self) -> Path:
        return self.folder / "index.lock"

    @property
    def watch_lock(self) -> Path:
        return self.folder / "watch.lock"


def ensure_folder(folder: Path) -> None:
    """Create the index folder, or say why it cannot be."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise IndexWriteError(f"cannot create index folder {folder}: {e.strerror or e}") from e


def open_for_writing(paths: IndexPaths) -> Catalog:
    """Open the catalog for the lock holder, rebuilding it if it is damaged or foreign.

    A catalog of an older schema that this one upgrades is upgraded in place
    (``Catalog._migrate``). One that cannot be opened, or one written by another schema,
    is moved aside (never deleted) and a new one is started; the vectors go with it, since their ids
    belonged to the old catalog. The documents themselves are never touched.
    """
    version = _read_version(paths.version)
    if version is not None and version != SCHEMA_VERSION and version not in MIGRATES_FROM:
        logger.warning(
            "index folder %s has schema version %r, this program writes %r; rebuilding it",
            paths.folder,
            version,
            SCHEMA_VERSION,
        )
        _set_aside(paths)
    try:
        catalog = Catalog.open(paths.catalog, check=True)
    except CatalogCorrupt as e:
        logger.warning(
            "catalog %s is unusable (%s); moving it aside and rebuilding", paths.catalog, e
        )
        _set_aside(paths)
        try:
            catalog = Catalog.open(paths.catalog)
        except CatalogCorrupt as e2:
            raise IndexWriteError(f"cannot create catalog {paths.catalog}: {e2}") from e2
    if catalog.created:
        # Chunk ids start again at 1: vectors saved for an older catalog must not survive.
        _drop_vectors(paths)
    _remove_stale_temporaries(paths)
    if version != SCHEMA_VERSION:
        try:
            atomic_write_bytes(paths.version, f"{SCHEMA_VERSION}\n".encode())
        except OSError as e:
            catalog.close()
            raise IndexWriteError(f"cannot write {paths.version}: {e.strerror or e}") from e
    return catalog


def _read_version(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except FileNotFoundError:
        return None
    except OSError as e:
        logger.warning("cannot read %s: %s", path, e)
        return None


def _set_aside(paths: IndexPaths) -> None:
    """Drop the derived vectors, then rename the catalog (and its WAL files) out of the way.

    In that order: a kill between the two steps must not leave old vectors beside a
    catalog whose chunk ids start again.
    """
    _drop_vectors(paths)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for suffix in ("", "-wal", "-shm"):
        src = Path(f"{paths.catalog}{suffix}")
        if src.exists():
            dst = src.with_name(f"{src.name}.broken-{stamp}")
            os.replace(src, dst)
            logger.warning("moved %s to %s", src.name, dst.name)
    fsync_dir(paths.folder)


def _drop_vectors(paths: IndexPaths) -> None:
    for derived in (paths.graph, paths.vectors):
        with contextlib.suppress(FileNotFoundError):
            derived.unlink()
            fsync_dir(paths.folder)


def _remove_stale_temporaries(paths: IndexPaths) -> None:
    """Temporary files of saves that a kill interrupted (only the lock holder calls this)."""
    for saved in (paths.vectors, paths.graph):
        for tmp in paths.folder.glob(f".{saved.name}.*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()
                logger.info("removed %s, left by an interrupted save", tmp.name)
