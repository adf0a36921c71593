"""The store seam: what the server and ``micro-rag`` need of an index, and which one to open.

Two implementations stand behind ``Store``: ``local.engine.Engine``, the embedded SQLite
+ FAISS index in the index folder (the default), and ``milvus.engine.MilvusEngine``, the
same tools over a Milvus database that many workers and servers share. Both call the
same extraction (``ingest.files``), fusion (``search.fusion``) and reading
(``search.reading``) code, so a result means the same thing on either. The edges reach a
store only through this module: ``prepare`` before a writer starts, ``check_folder``
before a reader opens, ``recorded_identity`` for how an index was built, ``open_store``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from micro_rag_mcp.core.address import StoreConfig
from micro_rag_mcp.core.results import (
    IndexState,
    IndexSummary,
    ProgressFn,
    ReindexReport,
    SearchOutcome,
    TextPassage,
)
from micro_rag_mcp.search.reading import DEFAULT_MAX_CHARS

if TYPE_CHECKING:
    from micro_rag_mcp.core.listing import FileListing
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.model.choice import Loader
    from micro_rag_mcp.search.fusion import SearchParams
    from micro_rag_mcp.search.scope import SearchScope


class Store(Protocol):
    """An index the tools serve: search it, bring it in line with the folder, read from it."""

    def start(self) -> None: ...
    def stop(self, timeout: float = 60.0) -> None: ...
    def load_model(self, timeout: float = 300.0) -> None: ...
    def search(
        self,
        query: str,
        top_k: int = 5,
        score_threshold: float = 0.2,
        scope: SearchScope | None = None,
    ) -> SearchOutcome: ...
    def reindex(
        self,
        *,
        force: bool = False,
        path_glob: str | None = None,
        progress: ProgressFn | None = None,
    ) -> ReindexReport: ...
    def read(
        self,
        path: str,
        *,
        char_start: int | None = None,
        char_end: int | None = None,
        page: int | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        anchor: str | None = None,
    ) -> TextPassage: ...
    def state(self) -> IndexState: ...
    def status(self) -> IndexSummary: ...
    def listing(self) -> FileListing: ...
    def written_elsewhere(self) -> bool:
        """Whether another process writes this index now (its ``reindex`` would be busy)."""
        ...


def open_store(
    settings: Settings,
    load_embedder: Loader,
    config: StoreConfig | None = None,
    *,
    folder: Path | None = None,
    params: SearchParams | None = None,
) -> Store:
    """The embedded index of ``settings`` (no ``config``) or the Milvus store ``config``
    names, indexing ``folder`` (None: a store that only searches and reads), ranking by
    ``params`` (None: the defaults)."""
    if config is None:
        from micro_rag_mcp.local.engine import Engine

        return Engine(settings, load_embedder, params=params)
    from micro_rag_mcp.milvus.engine import MilvusEngine

    return MilvusEngine(settings, load_embedder, config, folder=folder, params=params)


def holds_index(index_folder: Path) -> bool:
    """Whether ``index_folder`` holds an index already (a reader opens nothing else)."""
    from micro_rag_mcp.local.layout import IndexPaths

    return IndexPaths(index_folder).catalog.exists()


def check_folder(index_folder: Path, config: StoreConfig | None, *, given: bool) -> None:
    """Refuse, with ConfigError, an index folder that is not an index of ours (nothing is
    written; a store keeps nothing there). ``given``: named with ``--index-folder``."""
    if config is None:
        from micro_rag_mcp.local.layout import check_index_folder

        check_index_folder(index_folder, given=given)


def prepare(settings: Settings, config: StoreConfig | None, *, given: bool) -> None:
    """Make ready what a writer opens, once every flag is accepted: the index folder and
    its marker, or a reachable store that can hold the chunks; else ConfigError (a folder
    that is not ours is refused untouched) or StoreUnavailable."""
    if config is None:
        from micro_rag_mcp.local.layout import prepare_index_folder

        prepare_index_folder(settings.index_folder, given=given)
    else:
        from micro_rag_mcp.milvus.engine import prepare_store

        prepare_store(settings, config)


def recorded_identity(index_folder: Path, config: StoreConfig | None) -> dict[str, str]:
    """How an existing index (or the store) was built, as it recorded it: its
    ``vector_space``, its ``chunking`` and, in an index folder, its ``scope``; {} for
    none yet."""
    if config is None:
        from micro_rag_mcp.local.answers.status import recorded_identity as recorded_here

        return recorded_here(index_folder)
    from micro_rag_mcp.milvus.index import MilvusIndex

    index = MilvusIndex(config)
    try:
        return index.collections.identity() or {}
    finally:
        index.collections.close()
