"""One reindex pass that reads and embeds at once.

A reading thread walks the folder and stores file after file (``indexer.sync_files``,
through the reader process); meanwhile the pass's own thread embeds, 32 at a time, the
chunks that lack a vector, taking new ones as their files commit. The encoder is the cost
of a first index and uses every core; what reading costs beside it (the reader's round
trips, chunking, the catalog's commits and their fsync) is mostly waiting, hidden behind
the encoder instead of added to it. The model may still be loading when reading begins.

Every guarantee of a pass holds for both threads: a stop is seen between two steps of
either (one file read, or 32 chunks embedded) and ends the other at its next step; each
file is one transaction, so keyword search sees it as it commits; vectors embedded before
a stop are saved; the vectors of chunks replaced during the pass are dropped before each
save. A kill at any instant leaves the catalog and a saved vector file, whose surplus
the next pass drops (``indexer.reconcile``) and whose gaps it fills.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from micro_rag_mcp.core.errors import Stopped
from micro_rag_mcp.core.results import Progress, ProgressFn
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.ingest.files import EMBED_BATCH, SyncCounts
from micro_rag_mcp.ingest.scanner import Scope
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.passes.indexer import Follow, drop_orphans, reconcile, sync_files
from micro_rag_mcp.local.passes.tally import Tally
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.model.embedder import CountsTokens, Embedder
from micro_rag_mcp.text.vector_text import embedding_text

logger = logging.getLogger(__name__)

NEWS_WAIT_S = 0.25  # how long a step short of a full one waits for more before it runs
REFILL = 512  # chunk ids taken from the catalog at a time (at least a window's)


@dataclass(frozen=True, slots=True)
class Steps:
    """How a pass embeds: ``size`` chunks a step (a stop waits for one step), taken from
    a window of ``window`` chunks fetched at a time and ordered by length in tokens (the
    window's texts are all the pass holds); ``reading_nice``: how much lower the reading
    thread and its reader process run than the encoder (Linux)."""

    size: int = EMBED_BATCH
    window: int = 1024
    reading_nice: int = 0


DEFAULT_STEPS = Steps()


@dataclass(frozen=True, slots=True)
class Model:
    """How the pass gets the model: ``wait`` returns it once loaded, or None (none will
    come, or not within the timeout); ``failed`` says whether its load ended without it."""

    wait: Callable[[float], Embedder | None]
    failed: Callable[[], bool]
    vectors_for: Callable[[Embedder], VectorStore]  # the writer's store for this model
    # While ``--model auto`` waits for its choice (``choosing.Chooser``): called with
    # whether reading has stored every file; True if there is nothing to choose by.
    choose: Callable[[bool], bool] | None = None


@dataclass(slots=True)
class PassResult:
    counts: SyncCounts
    embedded: int
    vectors: VectorStore | None  # the store the pass wrote, if the model was there


class _Reading(threading.Thread):
    """``sync_files`` in a thread of its own, on a connection of its own to the catalog."""

    def __init__(
        self,
        catalog: Catalog,
        settings: Settings,
        scope: Scope | None,
        force: bool,
        tally: Tally,
        nice: int = 0,
    ) -> None:
        super().__init__(name="micro-rag-reading", daemon=True)
        self._nice = nice
        self._catalog = catalog
        self._settings = settings
        self._scope = scope
        self._force = force
        self._tally = tally
        self.counts = SyncCounts()
        self.error: BaseException | None = None
        self.news = threading.Event()  # set when a file commits, and at the end
        self.ended = threading.Event()
        self.follow = Follow()  # set ``listed`` once the pass's own files are read
        self.halt = self.follow.halt  # the pass asks reading to stop at its next step

    @property
    def listed(self) -> bool:
        """Whether the pass's own files are all stored (changes noted for it may follow)."""
        return self.follow.listed.is_set()

    def run(self) -> None:
        _lower_priority(self._nice)
        try:
            with contextlib.closing(self._catalog.another()) as catalog:
                sync_files(
                    catalog,
                    self._settings,
                    scope=self._scope,
                    force=self._force,
                    progress=self._step,
                    counts=self.counts,
                    follow=self.follow,
                )
        except BaseException as e:  # handed to the pass thread, which raises it
            self.error = e
        finally:
            self.follow.listed.set()
            self.ended.set()
            self.news.set()

    def _step(self, p: Progress) -> None:
        self.news.set()
        if self.halt.is_set() or self._tally.stop.is_set():
            raise Stopped("the pass is stopping")
        self._tally.read(p)


def read_and_embed(
    catalog: Catalog,
    settings: Settings,
    model: Model,
    *,
    scope: Scope | None = None,
    force: bool = False,
    progress: ProgressFn,
    stop: threading.Event,
    save_every_s: float = 30.0,
    steps: Steps = DEFAULT_STEPS,
    live: ProgressFn | None = None,
) -> PassResult:
    """Bring the catalog in line with the folder and give every chunk a vector.

    ``progress`` is called from the calling thread, between steps, with the progress of
    both; raising ``Stopped`` from it stops the pass, as does setting ``stop``. Without a
    model (its load failed) the pass reads only. ``live`` hears the progress at once, from
    either thread, as each file is read: it must only note it (a step may run for seconds,
    and what the index state says must not lag behind its files).
    """
    tally = Tally(progress, stop, live)
    reading = _Reading(catalog, settings, scope, force, tally, steps.reading_nice)
    reading.start()
    vectors: VectorStore | None = None
    embedded = 0
    completed = False
    try:
        embedder = _wait_for_model(model, reading, tally)
        if embedder is not None:
            vectors = model.vectors_for(embedder)
            embedded = _embed(catalog, vectors, embedder, reading, tally, save_every_s, steps)
        while not reading.follow.listed.wait(NEWS_WAIT_S):  # no model: follow reading
            _check(reading, tally)
        reading.halt.set()
        reading.join()
        _check(reading, tally)  # the last news, and what ended reading if not its end
        if vectors is not None and embedder is not None:  # changes of the last moments
            embedded += _embed_urgent(catalog, vectors, embedder, reading, tally, steps)[0]
        completed = True
    finally:
        if not completed:  # stopped or failed: a read under way is not waited for
            reading.follow.stop.set()
        reading.halt.set()
        reading.join()
        if vectors is not None:
            if completed:  # vectors of texts no chunk holds now; see drop_orphans
                drop_orphans(catalog, vectors)
            # A stopped pass saves what it embedded but builds no search graph: a build
            # of a large folder takes minutes, and the stop must be prompt. A stop that
            # comes during the build ends it at its next slice.
            _keep(vectors, graph=completed, stop=stop)
    return PassResult(reading.counts, embedded, vectors)


def _wait_for_model(model: Model, reading: _Reading, tally: Tally) -> Embedder | None:
    """The model once loaded, or None if its load failed (or, for ``--model auto``, the
    pass stored no text to choose it by); reading goes on meanwhile."""
    while True:
        if model.choose is not None and model.choose(reading.listed):
            return None
        embedder = model.wait(NEWS_WAIT_S)
        if embedder is not None or model.failed():
            return embedder
        _check(reading, tally)


def _check(reading: _Reading, tally: Tally) -> None:
    """Raise what ended reading early (a stop, an error), or a stop asked of the pass."""
    if reading.error is not None:
        raise reading.error
    tally.publish()


def _embed(
    catalog: Catalog,
    vectors: VectorStore,
    embedder: Embedder,
    reading: _Reading,
    tally: Tally,
    save_every_s: float,
    steps: Steps,
) -> int:
    """Give every chunk's text a vector, until the pass's own files are read and none is
    left; how many texts were embedded (a text that has a vector already is not)."""
    missing, cursor = reconcile(catalog, vectors)
    pending = deque(missing)
    if missing:
        logger.info("embedding %d chunks", len(missing))
    done = 0  # chunks seen to have a vector: embedded now, or kept from before
    embedded = 0
    last_save = time.monotonic()
    window: list[tuple[int, str]] = []  # fetched, shortest first; steps are taken from its end
    while True:
        _check(reading, tally)
        urgent, seen = _embed_urgent(catalog, vectors, embedder, reading, tally, steps)
        embedded += urgent
        done += seen
        if not window:
            reading.news.clear()
            listed = reading.listed  # before the refill: it then sees every commit
            if len(pending) < steps.window:
                fresh = catalog.chunks.chunk_ids_after(cursor, max(REFILL, steps.window))
                if fresh:
                    cursor = fresh[-1]
                    pending.extend(fresh)
            if listed and tally.to_embed is None:
                tally.to_embed = done + len(pending) + catalog.chunks.count_chunks_after(cursor)
                tally.publish()  # the phase is now embedding
            if not pending:
                if listed:
                    break
                reading.news.wait(NEWS_WAIT_S)
                continue
            if len(pending) < steps.size and not listed and reading.news.wait(NEWS_WAIT_S):
                continue  # more is coming: a full step embeds faster than a short one
            # The first window is one step: its vectors come at once, not after a window's
            # worth of token counting.
            wanted = steps.window if embedded else steps.size
            ids = [pending.popleft() for _ in range(min(wanted, len(pending)))]
            window, kept = _fetch(catalog, ids, embedder, vectors)
            done += kept
            tally.embedded = done
            if not window:
                continue
            # No check here: fetching a window is part of its first step.
        step = window[-steps.size :]
        del window[-steps.size :]
        _add(vectors, embedder, step, first=not embedded)
        embedded += len(step)
        done += len(step)
        tally.embedded = done
        if time.monotonic() - last_save > save_every_s:
            _keep(vectors, graph=True, stop=tally.stop)
            last_save = time.monotonic()
    tally.to_embed = done  # fewer than counted if chunks listed were replaced meanwhile
    if embedded:
        logger.info("embedded %d chunks", embedded)
    return embedded


def _embed_urgent(
    catalog: Catalog,
    vectors: VectorStore,
    embedder: Embedder,
    reading: _Reading,
    tally: Tally,
    steps: Steps,
) -> tuple[int, int]:
    """Embed the chunks of the files a watcher's changes stored, ahead of the rest; how
    many texts were embedded, and how many chunks were seen to have a vector."""
    files = reading.counts.take_urgent()
    if not files:
        return 0, 0
    ids = [cid for rel in files for cid in catalog.chunks.file_chunk_ids(rel)]
    todo, kept = _fetch(catalog, ids, embedder, vectors)
    for at in range(0, len(todo), steps.size):
        if at:
            _check(reading, tally)
        _add(vectors, embedder, todo[at : at + steps.size], first=False)
    return len(todo), kept + len(todo)


def _add(
    vectors: VectorStore, embedder: Embedder, step: list[tuple[int, str]], *, first: bool
) -> None:
    vectors.add([k for k, _ in step], embedder.embed_documents([t for _, t in step]))
    if first:  # the first vectors of the pass: a stop from now on keeps some
        logger.info("embedded the first %d chunks", len(step))


def _fetch(
    catalog: Catalog, ids: list[int], embedder: Embedder, vectors: VectorStore
) -> tuple[list[tuple[int, str]], int]:
    """The texts of these chunks that have no vector yet, as (key, what it is embedded as),
    ordered by length in tokens; and how many of the chunks have a vector already.

    A text shared by several chunks is embedded once. A step is padded to its longest
    chunk in tokens; steps of chunks of like length (taken from a window of
    ``Steps.window``) waste less of the encoder than steps in the order of storing. A
    chunk replaced since it was listed is gone and left out.
    """
    keys = catalog.chunks.keys_of(ids)
    first: dict[int, int] = {}  # key -> the first chunk that has it
    for cid, key in keys.items():
        first.setdefault(key, cid)
    unique = list(first)
    held = vectors.holds(unique)
    lacking = [first[k] for k, h in zip(unique, held.tolist(), strict=True) if not h]
    texts = catalog.chunks.chunk_texts(lacking)
    chunks = [(key, embedding_text(title, text)) for key, title, text in texts.values()]
    lengths = _lengths(embedder, [t for _, t in chunks])
    order = sorted(range(len(chunks)), key=lengths.__getitem__)
    return [chunks[i] for i in order], len(keys) - len(chunks)


def _lengths(embedder: Embedder, texts: list[str]) -> list[int]:
    """Tokens per text if the embedder can count them, else characters."""
    if isinstance(embedder, CountsTokens):
        return embedder.token_counts(texts)
    return [len(t) for t in texts]


def _lower_priority(nice: int) -> None:
    """Linux: lower this thread's priority by ``nice``; a process it starts inherits it."""
    if not nice or not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice)


def _keep(vectors: VectorStore, *, graph: bool, stop: threading.Event | None = None) -> None:
    """Bring the search graph in line if ``graph`` (see ``VectorStore.refresh_graph``;
    ``stop`` ends a build), and save the store if it changed.

    Also on the way out of a stopped or failed pass: what was embedded is kept.
    """
    if graph:
        vectors.refresh_graph(stop)
    if vectors.dirty or not vectors.path.exists():
        vectors.save()
