"""The values the core hands to its callers: hits, progress, index state, reports.

The server (and any other front end) reads these and nothing deeper; they are plain
frozen dataclasses and one enum, built by the engine and its parts.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from micro_rag_mcp.core.records import SkipGroup, StoredChunk

Phase = Literal["reading", "embedding"]  # what a pass is doing
Channel = Literal["vector", "keyword"]  # how a passage was found


@dataclass(frozen=True, slots=True)
class Progress:
    phase: Phase
    done: int
    total: int
    item: str = ""
    waiting_for: str = ""  # the pass a caller waits for ("start-up"), or "" for its own
    embedded: int = 0  # chunks this pass has embedded so far; embedding runs while reading
    reading: str = ""  # the file whose read just began (``done`` counts those before it)


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True, slots=True)
class Hit:
    chunk: StoredChunk
    score: float | None  # cosine similarity, None when the chunk has no vector yet
    fused: float
    channels: tuple[Channel, ...]
    stale: bool = False  # the file on disk no longer matches what was indexed, or is gone
    context: tuple[str, str] = ("", "")  # the file's text just before and after (anchors)
    repeats: int = 0  # other places of the same passage, folded into this hit (duplicates)
    elsewhere: tuple[StoredChunk, ...] = ()  # the first few of them, in rank order


class ModelState(enum.StrEnum):
    """Where the embedding model is: WAITING while ``--model auto`` has not chosen the
    encoder yet, LOADING until a load ends (or first starts), then READY or FAILED for
    good."""

    READY = "ready"
    LOADING = "loading"
    FAILED = "failed"
    WAITING = "waiting"


@dataclass(frozen=True, slots=True)
class IndexState:
    indexing: bool
    phase: str | None
    done: int | None
    total: int | None
    files_indexed: int
    files_failed: int
    chunks_total: int
    chunks_with_vectors: int
    model: ModelState
    model_error: str | None = None  # why the model FAILED
    watch: str = "off"  # how the index follows the folder; see ``Watcher.status``
    queued: int = 0  # changed paths waiting to be refreshed
    queue_fault: str | None = None  # why they wait, while refreshing them fails
    skipped: tuple[SkipGroup, ...] = ()  # entries the scans left out, by reason
    write_fault: str | None = None  # why this process's last pass could not write the index

    @property
    def model_status(self) -> str:
        """``ready``, ``loading``, ``waiting`` or ``unavailable: <reason>``, as a client
        reads it."""
        if self.model is ModelState.FAILED:
            return f"unavailable: {self.model_error}"
        return self.model.value


class Stage(Protocol):
    """How far a pass is: a ``Progress``, or another process's lock record."""

    @property
    def phase(self) -> str | None: ...
    @property
    def done(self) -> int | None: ...
    @property
    def total(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Counts:
    """What an index holds, as its state reports it."""

    files_indexed: int = 0
    files_failed: int = 0
    chunks: int = 0
    with_vectors: int = 0


def index_state(
    indexing: bool,
    stage: Stage | None,
    counts: Counts,
    model: ModelState,
    model_error: str | None,
    *,
    watch: str = "off",
    queued: int = 0,
    queue_fault: str | None = None,
    skipped: tuple[SkipGroup, ...] = (),
    write_fault: str | None = None,
) -> IndexState:
    """The one way an engine states its index: a pass (and how far it is), the counts,
    the model's state, and how the index follows the folder where the engine does."""
    return IndexState(
        indexing=indexing,
        phase=stage.phase if stage is not None else None,
        done=stage.done if stage is not None else None,
        total=stage.total if stage is not None else None,
        files_indexed=counts.files_indexed,
        files_failed=counts.files_failed,
        chunks_total=counts.chunks,
        chunks_with_vectors=counts.with_vectors,
        model=model,
        model_error=model_error,
        watch=watch,
        queued=queued,
        queue_fault=queue_fault,
        skipped=skipped,
        write_fault=write_fault,
    )


@dataclass(frozen=True, slots=True)
class ReindexReport:
    files_added: int
    files_updated: int
    files_removed: int
    files_unchanged: int
    files_failed: list[tuple[str, str]]
    chunks_total: int
    chunks_embedded: int
    elapsed_ms: int


@dataclass(frozen=True, slots=True)
class Found:
    """A store's answer to one query: the hits, and whether any of them is a good match."""

    hits: list[Hit]
    no_good_match: bool = False  # see ``fusion.no_good_match``
    cut: bool = False  # no hits, and only because of the score threshold


NO_GOOD_MATCH = (
    "no good match: no passage holds the query's rare words and none is close in meaning; "
    "the folder may not hold what was asked (the results are only the nearest there are)"
)


def found_notices(found: Found, score_threshold: float) -> list[str]:
    """What a search that ran says of what it found: nothing good (see
    ``fusion.no_good_match``), or nothing because the threshold cut every candidate."""
    if found.hits:
        return [NO_GOOD_MATCH] if found.no_good_match else []
    if found.cut:
        return [
            f"no passage has a cosine of at least {score_threshold:g} to the query; "
            "a lower threshold returns the nearest there are"
        ]
    return []


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: list[Hit]
    state: IndexState
    notices: list[str] = field(default_factory=list)
    no_good_match: bool = False  # see ``fusion.no_good_match``


@dataclass(frozen=True, slots=True)
class TextPassage:
    """A stretch of one indexed file's extracted text, as ``read`` returns it."""

    path: str
    ext: str
    mtime_ns: int
    text: str
    char_start: int
    char_end: int
    next_char_start: int | None  # where the next call starts; None once the range is done
    total_chars: int
    page: int | None  # page where the text starts (PDF)
    line_start: int | None  # lines of the text (text files, DOCX)
    line_end: int | None
    notices: list[str] = field(default_factory=list)
    changed: bool | None = None  # read by anchor: the passage was edited since
    similarity: float | None = None  # read by anchor: how much of it is left in place


@dataclass(frozen=True, slots=True)
class WriterInfo:
    """The process holding the index's write lock, and how far its pass is."""

    pid: int | None
    phase: str
    done: int | None
    total: int | None


@dataclass(frozen=True, slots=True)
class IndexSummary:
    """What an index folder holds, as ``status`` tells it."""

    index_folder: str
    files_indexed: int
    files_failed: int
    failed: list[tuple[str, str]]  # path, reason
    chunks: int
    chunks_with_vectors: int  # in the saved vector file
    vector_model: str | None  # what the vectors were made with
    chunking: str | None
    size_bytes: int | None  # None: the store does not tell a client (Milvus)
    last_indexed_at: float | None  # when a file's text was last stored
    writer: WriterInfo | None  # None: nobody is writing the index
    skipped: tuple[SkipGroup, ...] = ()  # entries the scans left out, by reason
    # Suffix -> files of it indexed by another installation, which reads a format this one
    # cannot (one with the ocr extra): kept as they were stored (``extra_readers``).
    kept: dict[str, int] = field(default_factory=dict)


def state_notices(state: IndexState) -> list[str]:
    """What a search says about the index beside its results (either store)."""
    notices: list[str] = []
    if state.indexing:
        where = f" ({state.phase} {state.done}/{state.total})" if state.total else ""
        notices.append(f"indexing is running{where}; results may be incomplete")
    if state.files_indexed == 0 and not state.indexing:
        notices.append(
            "no documents are indexed: the folder has no readable files of the "
            "configured types, or reindex has not run"
        )
    if state.queue_fault is not None:
        many = state.queued != 1
        notices.append(
            f"{state.queued} change{'s' if many else ''} of the folder wait{'' if many else 's'}: "
            f"{state.queue_fault}; {'they are' if many else 'it is'} retried until it works"
        )
    if state.write_fault is not None and state.queue_fault is None:
        notices.append(
            f"changes of the folder are not being indexed: {state.write_fault}; results "
            "come from the index as it was last written"
        )
    missing = state.chunks_total - state.chunks_with_vectors
    if missing > 0 and state.model is ModelState.READY:
        notices.append(
            f"{missing} of {state.chunks_total} chunks have no vector yet; "
            "those match by keyword, and only the best few carry a score"
        )
    return notices
