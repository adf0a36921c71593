"""A session's handle on a shared engine: the ``Store`` its server uses.

It serves every call from the shared engine; ``start`` starts that engine once, whoever
asks first, and ``stop`` detaches this session only (the engine stops when no session
needs it: ``indexes``).
"""

from __future__ import annotations

import threading
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
from micro_rag_mcp.search.reading import DEFAULT_MAX_CHARS
from micro_rag_mcp.serve.jobs import ReindexJobs
from micro_rag_mcp.store import Store

if TYPE_CHECKING:
    from micro_rag_mcp.core.listing import FileListing
    from micro_rag_mcp.search.scope import SearchScope


class Shared(Protocol):
    jobs: ReindexJobs

    def open(self) -> Store: ...


class SessionStore:
    """One session's view of a shared engine (a ``Store``, and a ``server.SharedIndex``)."""

    def __init__(self, shared: Shared, detach: Callable[[], None]) -> None:
        self._shared = shared
        self._detach = detach
        self._lock = threading.Lock()
        self._detached = False

    @property
    def jobs(self) -> ReindexJobs:
        return self._shared.jobs

    def open(self) -> Store:
        return self

    @property
    def _store(self) -> Store:
        return self._shared.open()

    def start(self) -> None:
        self._shared.open()

    def stop(self, timeout: float = 60.0) -> None:
        with self._lock:
            if self._detached:
                return
            self._detached = True
        self._detach()

    def load_model(self, timeout: float = 300.0) -> None:
        self._store.load_model(timeout)

    def search(
        self,
        query: str,
        top_k: int = 5,
        score_threshold: float = 0.2,
        scope: SearchScope | None = None,
    ) -> SearchOutcome:
        return self._store.search(query, top_k, score_threshold, scope)

    def reindex(
        self,
        *,
        force: bool = False,
        path_glob: str | None = None,
        progress: ProgressFn | None = None,
    ) -> ReindexReport:
        return self._store.reindex(force=force, path_glob=path_glob, progress=progress)

    def read(
        self,
        path: str,
        *,
        char_start: int | None = None,
        char_end: int | None = None,
        page: int | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        anchor: str | None = None,
    ) -> TextPassage:
        return self._store.read(
            path,
            char_start=char_start,
            char_end=char_end,
            page=page,
            max_chars=max_chars,
            anchor=anchor,
        )

    def state(self) -> IndexState:
        return self._store.state()

    def status(self) -> IndexSummary:
        return self._store.status()

    def listing(self) -> FileListing:
        return self._store.listing()

    def written_elsewhere(self) -> bool:
        return self._store.written_elsewhere()
