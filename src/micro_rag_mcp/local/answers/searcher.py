"""Searching the local index: both channels at once, from pooled catalog readers, the
query embedded beside the keyword channel; each hit's file checked against the disk and
queued for a refresh when it changed."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from micro_rag_mcp.core.errors import IndexUnreadable
from micro_rag_mcp.core.formats import all_code
from micro_rag_mcp.core.results import (
    Found,
    Hit,
    IndexState,
    SearchOutcome,
    found_notices,
    state_notices,
)
from micro_rag_mcp.core.shown import first_few
from micro_rag_mcp.local.answers.channels import VectorSide
from micro_rag_mcp.local.answers.reader_pool import ReaderPool
from micro_rag_mcp.local.answers.search import search_beside
from micro_rag_mcp.local.answers.state import AnswerParts, IndexStates
from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt
from micro_rag_mcp.local.vectors.cache import reader_meta
from micro_rag_mcp.local.watch.changes import stale_files
from micro_rag_mcp.local.watch.watcher import STANDBY, WATCHED_ELSEWHERE
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.reading import with_context
from micro_rag_mcp.search.scope import Resolved, ScopeCache, SearchScope

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_T = TypeVar("_T")


class Searcher:
    """The ``search`` of one index.

    ``params`` gives the engine's search parameters at each search (they may be set
    anew between searches); ``states`` tells the index's state beside the hits.
    """

    def __init__(
        self,
        parts: AnswerParts,
        params: Callable[[], SearchParams],
        states: IndexStates,
        rebuild: Callable[[], None] = lambda: None,
    ) -> None:
        self.settings = parts.settings
        self._params = params
        self._states = states
        self._model = parts.model
        self._vectors = parts.vectors
        self._writer = parts.writer
        self._watcher = parts.watcher
        self._pool = parts.pool
        self._readers = ReaderPool(parts.paths.catalog)
        self._index_folder = parts.paths.folder
        self._rebuild = rebuild
        self._scopes = ScopeCache()

    def close(self) -> None:
        """Close the pooled catalog readers."""
        self._readers.close()

    def search(
        self,
        query: str,
        top_k: int = 5,
        score_threshold: float = 0.2,
        scope: SearchScope | None = None,
    ) -> SearchOutcome:
        """The best passages for the query (from the files of ``scope``, if given), with
        the index's state and any notices.

        The query's embedding and the vector channel run in a thread of their own while
        this one runs the keyword channel and counts the catalog: at a million chunks each
        channel takes several milliseconds, and the first search after a start waits for
        the model meanwhile.
        """
        notices: list[str] = []
        with contextlib.ExitStack() as held:
            try:
                catalog = held.enter_context(self._readers.reader())
            except CatalogCorrupt:
                self._model_notices(self._model.get(self.settings.model_wait_s), notices)
                state = self._states.of(None)
                notices.append(self._nothing_notice(state))
                return SearchOutcome([], state, notices)
            within = self._scopes.resolve(catalog, scope) if scope is not None else None
            if within is not None and within.empty:
                notices.append(within.notice())
                state = self._states.of(catalog)
                return SearchOutcome([], state, [*notices, *state_notices(state)])
            found, state = self._search_in(catalog, query, top_k, score_threshold, notices, within)
        notices.extend(state_notices(state))
        notices.extend(found_notices(found, score_threshold))
        weak = found.no_good_match and bool(found.hits)
        return SearchOutcome(found.hits, state, notices, no_good_match=weak)

    def _nothing_notice(self, state: IndexState) -> str:
        """Why nothing is indexed: not yet, or the index was deleted under this server
        (which then rebuilds it; a search must not say "not yet" until someone reindexes)."""
        if not self._writer.wrote:
            return "nothing is indexed yet" + (": indexing is running" if state.indexing else "")
        if not self._writer.running:
            self._rebuild()
        return (
            f"the index in {self._index_folder} was deleted while the server ran: it is being "
            "rebuilt from the folder, search again in a moment"
        )

    def _search_in(
        self,
        catalog: Catalog,
        query: str,
        top_k: int,
        score_threshold: float,
        notices: list[str],
        within: Resolved | None = None,
    ) -> tuple[Found, IndexState]:
        try:
            pending = self._beside(self._vector_side, query, reader_meta(catalog), within)
            try:
                stats = self._states.counts(catalog)
                found = search_beside(
                    catalog,
                    query,
                    lambda: pending.result()[1],
                    top_k=top_k,
                    score_threshold=score_threshold,
                    params=self._params(),
                    files=within.file_ids if within is not None else None,
                    all_code=all_code(self.settings.exts),
                )
            finally:
                # Even after a failure here: no model call may outlive the search (a process
                # that exits during one is aborted by onnxruntime).
                wait([pending])
            embedder, _ = pending.result()
            self._model_notices(embedder, notices)
            hits = with_context(catalog, self._mark_stale(found.hits, notices))
            return replace(found, hits=hits), self._states.of(catalog, stats)
        except sqlite3.DatabaseError as e:
            raise IndexUnreadable(f"the index cannot be read right now ({e}); try again") from e

    def _vector_side(
        self, query: str, meta: tuple[str | None, str | None], within: Resolved | None = None
    ) -> tuple[Embedder | None, VectorSide | None]:
        """The model (waiting for it as long as a search may), and the vector channel's
        part of the search if the model and the vectors are there."""
        embedder = self._model.get(self.settings.model_wait_s)
        if embedder is None or "vector" not in self._params().channels:
            return embedder, None
        query_vector = embedder.embed_query(query)
        store = self._vectors.for_catalog(meta, embedder, writing=self._writer.running)
        if store is None:
            return embedder, None
        keys = within.keys if within is not None else None
        hits = store.search(query_vector, self._params().depth, keys)
        chunks = within.chunk_ids if within is not None else None

        def embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
            # In a search thread, as the query is embedded.
            return self._beside(embedder.embed_documents, texts).result()

        return embedder, VectorSide(store, query_vector, hits, chunks, embed)

    def _beside(self, fn: Callable[..., _T], *args: object) -> Future[_T]:
        """``fn(*args)`` in the search threads (here, once the engine is stopping)."""
        try:
            return self._pool.submit(fn, *args)
        except RuntimeError:  # the pool is shut down: the engine is stopping
            done: Future[_T] = Future()
            try:
                done.set_result(fn(*args))
            except Exception as e:
                done.set_exception(e)
            return done

    def _model_notices(self, embedder: Embedder | None, notices: list[str]) -> None:
        if embedder is None:
            notices.append(self._model.absent_notice())

    def _mark_stale(self, hits: list[Hit], notices: list[str]) -> list[Hit]:
        """Flag the hits whose file changed since it was indexed, and queue those files."""
        folder = self.settings.data_folder
        if not folder.is_dir():
            notices.append(
                f"the data folder {folder} is gone (deleted, moved or unmounted): results come "
                "from the index as it was, and nothing is reindexed until the folder is back"
            )
            return [replace(h, stale=True) for h in hits]
        stale = stale_files(folder, (h.chunk for h in hits))
        if not stale:
            return hits
        queued = self._watcher.queue_stale(stale)
        notices.append(_stale_notice(stale, queued, self._watcher.status))
        return [replace(h, stale=h.chunk.path in stale) for h in hits]


def _stale_notice(stale: set[str], queued: bool, watch: str) -> str:
    names = sorted(stale)
    shown = first_few(names)
    many = len(names) > 1
    they, them = ("they", "them") if many else ("it", "it")
    said = (
        f"{len(names)} file{'s' if many else ''} changed on disk since {they} "
        f"{'were' if many else 'was'} indexed ({shown}); results from {them} are marked stale"
    )
    if queued:
        return f"{said}: {they} {'are' if many else 'is'} being reindexed, search again in a moment"
    if watch in (STANDBY, WATCHED_ELSEWHERE):
        return f"{said}: the process that watches this folder will reindex {them}"
    return (
        f"{said}: reindex {them} (the reindex tool, or micro-rag index) to bring {them} "
        "up to date, unless a server that watches this folder does it first"
    )
