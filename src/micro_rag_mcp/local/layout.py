"""The index folder: its file names, its marker, and recovery from a damaged catalog.

The folder is ours or it is not used: ``check_index_folder`` accepts a folder that does
not exist, is empty, or holds an index of ours, known by its marker file (written first,
when the folder is made). Any other folder (the person's ``index/`` of notes) is refused
before anything is written, and the index folder is the only one the scan leaves out.
The index's version is its catalog's (``catalog.INDEX_VERSION``; see ``rebuild``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from micro_rag_mcp.core.errors import ConfigError, DataFolderGone, IndexWriteError
from micro_rag_mcp.core.fsutil import atomic_write_bytes, fsync_dir
from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt

logger = logging.getLogger(__name__)

MARKER_FORMAT = "micro-rag-mcp index"
# Entries that say nothing of who owns a folder: a marker save a kill interrupted, and
# the file a desktop's file manager leaves in every folder it shows.
_NEUTRAL = re.compile(r"\.micro-rag-index\.json\..*\.tmp|\.DS_Store")


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
    def lock(self) -> Path:
        return self.folder / "index.lock"

    @property
    def watch_lock(self) -> Path:
        return self.folder / "watch.lock"

    @property
    def marker(self) -> Path:
        """The file that says the folder holds an index of ours (format and version)."""
        return self.folder / "micro-rag-index.json"


def check_index_folder(folder: Path, *, given: bool) -> None:
    """Refuse, with ConfigError, an index folder that holds anything but an index of ours.

    ``given``: the person named it with ``--index-folder`` (else it is the default
    ``<folder>/index``). Nothing is written.
    """
    if is_ours(folder):
        return
    if given:
        raise ConfigError(
            f"--index-folder {folder} holds files that are not an index of micro-rag-mcp; "
            "give a new or empty folder, or the folder of an existing index"
        )
    raise ConfigError(
        f"{folder} holds files that are not an index of micro-rag-mcp, so the index "
        "cannot live there; give it another place with --index-folder DIR"
    )


def is_ours(folder: Path) -> bool:
    """Whether ``folder`` may serve as the index folder: it does not exist, is empty, or
    holds our marker."""
    try:
        names = [e.name for e in os.scandir(folder) if not _NEUTRAL.fullmatch(e.name)]
    except FileNotFoundError:
        return True
    except NotADirectoryError:
        return False
    except OSError as e:
        raise ConfigError(f"--index-folder {folder}: cannot be listed ({e.strerror or e})") from e
    return not names or _is_marker(IndexPaths(folder).marker)


def ensure_folder(folder: Path, data: Path | None = None) -> None:
    """Create the index folder and its marker, or say why it cannot be.

    A folder without the marker gets it only if it is ours (``is_ours``): the writer
    never settles in a folder of someone else's files. With ``data`` (the data folder),
    ``DataFolderGone`` if that folder is gone: an index folder inside it would otherwise
    bring back an empty data folder and an empty index.
    """
    if data is not None and not data.is_dir():
        raise DataFolderGone(
            f"the data folder {data} is gone (deleted, moved or unmounted); "
            "nothing is indexed until it is back"
        )
    paths = IndexPaths(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if _is_marker(paths.marker):
            return
        if not is_ours(folder):
            raise IndexWriteError(f"{folder} holds files that are not an index of micro-rag-mcp")
        body = {"format": MARKER_FORMAT}
        atomic_write_bytes(paths.marker, (json.dumps(body) + "\n").encode())
    except (OSError, ConfigError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise IndexWriteError(f"cannot create index folder {folder}: {why}") from e


def _is_marker(path: Path) -> bool:
    try:
        body = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(body, dict) and body.get("format") == MARKER_FORMAT


def open_for_writing(paths: IndexPaths) -> Catalog:
    """Open the catalog for the lock holder, rebuilding it if it is damaged.

    One that cannot be opened is moved aside (never deleted) and a new one is started.
    The documents themselves are never touched. A catalog of another version raises
    ``OtherVersion``: it is rebuilt beside itself (``rebuild.pass_target``).
    """
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
    _remove_stale_temporaries(paths)
    return catalog


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


def prepare_index_folder(index: Path, *, given: bool) -> None:
    """Make the index folder (with its marker) once every flag is accepted, or raise
    ConfigError; a folder that is not ours is refused first, untouched.

    ``given``: it was named with ``--index-folder``."""
    check_index_folder(index, given=given)
    existed = index.is_dir()
    try:
        ensure_folder(index)
    except IndexWriteError as e:
        if not existed:
            why = getattr(e.__cause__, "strerror", None) or e.__cause__ or e
            raise ConfigError(f"--index-folder {index}: cannot be created ({why})") from e
        # An index of ours on a read-only disk: it is served as it is.
        logger.warning("cannot mark %s as an index folder (%s)", index, e)
