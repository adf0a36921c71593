"""The store seam: what the server and ``micro-rag`` need of an index, and which one to open.

Two implementations stand behind ``Store``: ``engine.Engine``, the embedded SQLite +
FAISS index in the index folder (the default), and ``milvus_engine.MilvusEngine``, the
same tools over a Milvus database that many workers and servers share. Both call the
same extraction (``indexer``), fusion (``search.fuse``) and reading (``reading``) code,
so a result means the same thing on either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from micro_rag_mcp.core.results import (
    IndexState,
    IndexSummary,
    ProgressFn,
    ReindexReport,
    SearchOutcome,
    TextPassage,
)
from micro_rag_mcp.milvus.config import StoreConfig
from micro_rag_mcp.search.reading import DEFAULT_MAX_CHARS

if TYPE_CHECKING:
    from pathlib import Path

    from micro_rag_mcp.core.listing import FileListing
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.model.embedder import Embedder
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


def open_store(
    settings: Settings,
    load_embedder: Callable[[], Embedder],
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
