"""The tools over a Milvus store: ``Store`` for an index that many processes share.

Unlike ``engine.Engine``, this facade keeps nothing on local disk, runs no start-up pass
and watches no folder: workers (``micro-rag index --store``) keep the store in line, and
any number of servers search it (one given a data folder also indexes it on ``reindex``).
A search is gathered and fused by ``search.gather``, as the embedded store's is.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from micro_rag_mcp.core.address import StoreConfig
from micro_rag_mcp.core.errors import (
    ConfigError,
    IndexBusy,
    InvalidArgument,
    ModelUnavailable,
    NotIndexed,
    Stopped,
    StoreUnavailable,
)
from micro_rag_mcp.core.pace import ProgressLog
from micro_rag_mcp.core.results import (
    Counts,
    IndexState,
    IndexSummary,
    ModelState,
    Progress,
    ProgressFn,
    ReindexReport,
    SearchOutcome,
    TextPassage,
    found_notices,
    index_state,
    state_notices,
)
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.core.shown import shown
from micro_rag_mcp.ingest.scanner import PathGlob
from micro_rag_mcp.ingest.skipped import MemoryMeta, recorded
from micro_rag_mcp.milvus.index import KEYWORDS_ID, STORE_VERSION, MilvusIndex
from micro_rag_mcp.milvus.keywords import KeywordStats
from micro_rag_mcp.milvus.listing import MilvusListing
from micro_rag_mcp.milvus.search import store_search
from micro_rag_mcp.milvus.sync import BATCH_CHUNKS, sync_store
from micro_rag_mcp.milvus.text import StoreText
from micro_rag_mcp.milvus.whole_files import FileStats
from micro_rag_mcp.model.choice import AutoLoad, Loader
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.model.handle import (
    ModelHandle,
    reads_all_languages,
    recorded_model,
    vector_space,
)
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.reading import DEFAULT_MAX_CHARS, read_indexed
from micro_rag_mcp.search.scope import SearchScope

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

POLL_S = 0.25
# The counts in a search's ``index`` block are reused for 5 s, and for at least 20 times
# as long as they took: on milvus-lite, counting 200,000 files took 8 s of the server's
# one interpreter, and counting every 5 s would take most of it from searches.
COUNTS_TTL_S = 5.0
COUNTS_COST_SHARE = 20


MAX_STORE_CHUNK = 16_000  # characters: a chunk's text must fit a Milvus VARCHAR (64 KiB)


def prepare_store(settings: Settings, config: StoreConfig) -> None:
    """Refuse a chunk size the store cannot hold (ConfigError), and a store that cannot
    be reached (StoreUnavailable), before anything starts."""
    if settings.chunk_size > MAX_STORE_CHUNK:
        raise ConfigError(f"--chunk-size must be at most {MAX_STORE_CHUNK} with --store")
    index = MilvusIndex(config)
    try:
        index.collections.connect()
    finally:
        index.collections.close()


class MilvusEngine:
    """Search, read and (given a folder) reindex one Milvus store."""

    def __init__(
        self,
        settings: Settings,
        load_embedder: Loader,
        config: StoreConfig,
        *,
        folder: Path | None = None,
        params: SearchParams | None = None,
        batch_chunks: int = BATCH_CHUNKS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if folder is not None and folder != settings.data_folder:
            raise ValueError("folder must be the settings' data folder")
        self.settings = settings
        self.config = config
        self.folder = folder
        self.params = params or SearchParams()
        self.index = MilvusIndex(config)
        self.keyword_stats = KeywordStats()  # the keyword channel's word counts
        self.file_stats = FileStats()  # and its whole files' (long CJK queries)
        if isinstance(load_embedder, AutoLoad):  # auto: what the collection recorded, else
            spaces = self.index.collections.vector_space  # MiniLM: any folder may add to it
            load_embedder = load_embedder.resolved(lambda: recorded_model(spaces()))
        self._model = ModelHandle(load_embedder)
        self._stop = threading.Event()
        self._busy = threading.Lock()
        self._progress: Progress | None = None
        self._checked: set[str] = set()  # identity keys this process found its own
        self._counted: tuple[float, tuple[int, int, int]] = (-math.inf, (0, 0, 0))  # until
        self._counted_lock = threading.Lock()
        self.batch_chunks = batch_chunks  # chunks embedded and written together
        self._skipped = MemoryMeta()  # what this process's passes left out of the folder
        self._clock = clock  # what the counts' expiry is measured by

    # -- life cycle ----------------------------------------------------------------

    def start(self) -> None:
        """Load the model in the background; the store is kept in line by workers."""
        self._model.start()

    def load_model(self, timeout: float = 300.0) -> None:
        self._model.get(timeout)

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        deadline = time.monotonic() + timeout
        if self._busy.acquire(timeout=timeout):  # a pass stops at its next step
            self._busy.release()
        else:
            logger.warning("the reindex pass did not stop within %g s", timeout)
        self._model.join(max(0.0, deadline - time.monotonic()))
        self.index.collections.close()

    def identity(self, embedder: Embedder) -> dict[str, str]:
        """What the store must have been made with for this process to add to it."""
        return {
            "vector_space": vector_space(embedder),
            "chunking": self.settings.chunking_id,
            "keywords": KEYWORDS_ID,
            "version": STORE_VERSION,
        }

    # -- reindex ---------------------------------------------------------------------

    def reindex(
        self,
        *,
        force: bool = False,
        path_glob: str | None = None,
        progress: ProgressFn | None = None,
    ) -> ReindexReport:
        """Bring this process's share of the store in line with its folder."""
        if self.folder is None:
            raise InvalidArgument(
                "this server has no data folder to index (--data-folder); the store is kept "
                "up to date by micro-rag index FOLDER --store URL"
            )
        if not self._busy.acquire(blocking=False):
            raise IndexBusy("a reindex of the store is already running in this process")
        try:
            return self._pass(force, PathGlob(path_glob) if path_glob else None, progress)
        finally:
            self._progress = None
            self._counted = (-math.inf, (0, 0, 0))  # what this pass changed shows at once
            self.keyword_stats.forget()  # and counts its words, even at the same chunk count
            self.file_stats.forget()
            self._busy.release()

    def _pass(
        self, force: bool, scope: PathGlob | None, progress: ProgressFn | None
    ) -> ReindexReport:
        started = time.monotonic()
        embedder = self._wait_for_model()
        identity = self.identity(embedder)
        # A store made otherwise, or of another version, is refused before anything is
        # added to it.
        keys = ("vector_space", "chunking", "keywords")
        collections = self.index.collections
        collections.check_identity(identity, keys)
        collections.create(embedder.dimension, identity)  # unless it is there already
        log_progress = ProgressLog(lambda line: logger.info("%s", line), 10.0)

        def report(p: Progress) -> None:
            if self._stop.is_set():
                raise Stopped("the server is stopping")
            self._progress = p
            log_progress(p)
            if progress is not None:
                progress(p)

        counts, embedded = sync_store(
            self.index,
            embedder,
            self.settings,
            shard=self.config.shard,
            scope=scope,
            force=force,
            progress=report,
            batch_chunks=self.batch_chunks,
            skipped=self._skipped,
        )
        failed = [
            (p, row.record.error or "")
            for p, row in sorted(self.index.files("failed", self.config.shard).items())
            if scope is None or scope.matches(p)
        ]
        return counts.report(failed, self.index.count_chunks(), embedded, started)

    def _wait_for_model(self) -> Embedder:
        while True:
            embedder = self._model.get(POLL_S)
            if embedder is not None:
                return embedder
            if self._model.state is ModelState.FAILED:
                raise ModelUnavailable(
                    f"the embedding model is unavailable ({self._model.error}); a store is "
                    "indexed with vectors, so nothing was indexed"
                )
            if self._stop.is_set():
                raise Stopped("the server is stopping")

    # -- search ----------------------------------------------------------------------

    def search(
        self,
        query: str,
        top_k: int = 5,
        score_threshold: float = 0.2,
        scope: SearchScope | None = None,
    ) -> SearchOutcome:
        if scope is not None:
            raise InvalidArgument(
                "path_glob, modified_after, modified_before and file_types are not supported "
                "on a Milvus store (--store); search without them"
            )
        notices: list[str] = []
        embedder = self._model.get(self.settings.model_wait_s)
        query_vector: npt.NDArray[np.float32] | None = None
        if embedder is not None:
            query_vector = embedder.embed_query(query)
        else:
            notices.append(self._model.absent_notice())
        try:
            if not self.index.collections.exists():
                notices.append("nothing is indexed yet in the store")
                return SearchOutcome([], self._state(), notices)
            self._check_searchable(embedder)
            found = store_search(
                self.index,
                self.keyword_stats,
                self.file_stats,
                query,
                query_vector,
                top_k=top_k,
                score_threshold=score_threshold,
                params=replace(self.params, multilingual_encoder=reads_all_languages(embedder)),
            )
            state = self._state()
        except StoreUnavailable as e:
            notices.append(f"{e}; no results until it answers again")
            return SearchOutcome([], self._state_unknown(), notices)
        notices.extend(state_notices(state))
        notices.extend(found_notices(found, score_threshold))
        weak = found.no_good_match and bool(found.hits)
        return SearchOutcome(found.hits, state, notices, no_good_match=weak)

    def _check_searchable(self, embedder: Embedder | None) -> None:
        """Refuse, once, a store whose keywords (or vectors) this process would misread."""
        wanted = {"keywords"} if embedder is None else {"keywords", "vector_space"}
        if wanted <= self._checked:
            return
        ours = (
            {"keywords": KEYWORDS_ID, "version": STORE_VERSION}
            if embedder is None
            else self.identity(embedder)
        )
        self.index.collections.check_identity(ours, sorted(wanted))
        self._checked |= wanted

    # -- read ------------------------------------------------------------------------

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
        """The stored text of one file: the store alone, no copy of the folder needed."""
        if not self.index.collections.exists():
            raise NotIndexed(f"no file {shown(path)} in the store: nothing is indexed yet")
        return read_indexed(
            StoreText(self.index),
            self.folder,
            path,
            char_start=char_start,
            char_end=char_end,
            page=page,
            max_chars=max_chars,
            indexing=self._busy.locked(),
            anchor=anchor,
        )

    def written_elsewhere(self) -> bool:
        return False  # workers share a store: none waits for another

    def listing(self) -> MilvusListing:
        """The stored files, for a client to page through and follow."""
        return MilvusListing(self.index)

    # -- state -----------------------------------------------------------------------

    def state(self) -> IndexState:
        try:
            return self._state()
        except StoreUnavailable:
            return self._state_unknown()

    def _state(self) -> IndexState:
        ok, failed, chunks = self._counts()
        counts = Counts(ok, failed, chunks, chunks)  # a chunk enters the store with its vector
        return index_state(
            self._busy.locked(),
            self._progress,
            counts,
            self._model.state,
            self._model.error,
            skipped=recorded(self._skipped),
        )

    def _counts(self) -> tuple[int, int, int]:
        """Files indexed and failed, and chunks, counted again once the last counts
        expire (a count is a scan on some Milvus deployments; a search should not pay
        for it each time)."""
        with self._counted_lock:
            until, counts = self._counted
            started = self._clock()
            if started >= until or self._busy.locked():
                exists = self.index.collections.exists()
                counts = (
                    (*self.index.count_files(), self.index.count_chunks()) if exists else (0, 0, 0)
                )
                ended = self._clock()
                reuse = max(COUNTS_TTL_S, COUNTS_COST_SHARE * (ended - started))
                self._counted = (ended + reuse, counts)
            return counts

    def _state_unknown(self) -> IndexState:
        """While the store does not answer: nothing is known of it."""
        return index_state(
            self._busy.locked(), None, Counts(), self._model.state, self._model.error
        )

    def status(self) -> IndexSummary:
        identity = self.index.collections.identity()
        if identity is None:
            raise NotIndexed(f"nothing is indexed in the store {self.config.url} yet")
        files = self.index.files()
        failed = [
            (p, r.record.error or "")
            for p, r in sorted(files.items())
            if r.record.status == "failed"
        ]
        chunks = self.index.count_chunks()
        return IndexSummary(
            index_folder=self.config.url,
            files_indexed=sum(r.record.status == "ok" for r in files.values()),
            files_failed=len(failed),
            failed=failed,
            chunks=chunks,
            chunks_with_vectors=chunks,
            vector_model=identity.get("vector_space"),
            chunking=identity.get("chunking"),
            size_bytes=None,  # Milvus tells a client row counts, not bytes
            last_indexed_at=max((r.indexed_at for r in files.values()), default=None),
            writer=None,
            skipped=recorded(self._skipped),
        )
