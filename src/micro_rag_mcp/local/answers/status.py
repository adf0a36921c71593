"""What an index holds, read from its folder without writing anything or loading the model."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from micro_rag_mcp.core.errors import IndexUnreadable, NotIndexed
from micro_rag_mcp.core.fsutil import holder_progress
from micro_rag_mcp.core.results import IndexSummary, WriterInfo
from micro_rag_mcp.ingest.skipped import recorded
from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt
from micro_rag_mcp.local.layout import IndexPaths
from micro_rag_mcp.local.vectors.store import saved_ids

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)


def summarize(paths: IndexPaths, lacking: Collection[str] = ()) -> IndexSummary:
    """Files by state, failures, chunks, saved vectors, size, last change, the writer;
    and the files indexed from formats this installation has no reader for (``lacking``).

    Raises ``NotIndexed`` when the folder holds no catalog yet, ``IndexUnreadable`` when
    it cannot be read.
    """
    if not paths.catalog.exists():
        raise NotIndexed(f"no index in {paths.folder}")
    try:
        catalog = Catalog.open_reader(paths.catalog)
    except CatalogCorrupt as e:
        raise IndexUnreadable(f"the index in {paths.folder} cannot be read ({e})") from e
    try:
        with catalog.snapshot():
            stats = catalog.stats()
            failed = catalog.failures()
            last = catalog.last_indexed_at()
            vector_model = catalog.get_meta("vector_model")
            chunking = catalog.get_meta("chunking")
            keys = catalog.chunks.id_keys()[1]
            skipped = recorded(catalog)
            kept = _kept(catalog, lacking)
    except sqlite3.DatabaseError as e:
        raise IndexUnreadable(f"the index in {paths.folder} cannot be read right now ({e})") from e
    finally:
        catalog.close()
    return IndexSummary(
        index_folder=str(paths.folder),
        files_indexed=stats.files_indexed,
        files_failed=stats.files_failed,
        failed=failed,
        chunks=stats.chunks,
        chunks_with_vectors=_saved_vectors(paths.vectors, keys),
        vector_model=vector_model,
        chunking=chunking,
        size_bytes=_size_on_disk(paths.folder),
        last_indexed_at=last,
        writer=_writer(paths.lock),
        skipped=skipped,
        kept=kept,
    )


def _kept(catalog: Catalog, lacking: Collection[str]) -> dict[str, int]:
    """How many indexed files of each suffix in ``lacking`` the catalog holds."""
    if not lacking:
        return {}
    kept: dict[str, int] = {}
    for record in catalog.files().values():
        if record.status == "ok" and record.ext in lacking:
            kept[record.ext] = kept.get(record.ext, 0) + 1
    return dict(sorted(kept.items()))


def _saved_vectors(path: Path, keys: npt.NDArray[np.int64]) -> int:
    """How many of the chunks (given by their vector keys) have a vector in the saved file."""
    import numpy as np

    ids = saved_ids(path)
    return 0 if ids is None else int(np.isin(keys, ids).sum())


def _size_on_disk(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue  # gone between the listing and the stat
    return total


def _writer(lock: Path) -> WriterInfo | None:
    progress = holder_progress(lock)
    if progress is None:
        return None
    return WriterInfo(
        pid=progress.pid,
        phase=progress.phase or "starting",
        done=progress.done,
        total=progress.total,
    )


def recorded_identity(index_folder: Path) -> dict[str, str]:
    """How the index in ``index_folder`` was built, as its catalog recorded it (the keys
    a store's identity uses: ``vector_space``, ``chunking``, and ``scope``); {} for none."""
    try:
        catalog = Catalog.open_reader(IndexPaths(index_folder).catalog)
    except (CatalogCorrupt, OSError):
        return {}
    try:
        recorded = {key: catalog.get_meta(meta) for key, meta in _IDENTITY_META.items()}
    finally:
        catalog.close()
    return {key: value for key, value in recorded.items() if value}


# The catalog's meta key of each part of the identity.
_IDENTITY_META = {"vector_space": "vector_model", "chunking": "chunking", "scope": "scope"}
