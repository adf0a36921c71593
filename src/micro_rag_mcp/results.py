"""The values the core hands to its callers: hits, progress, index state, reports.

The server (and any other front end) reads these and nothing deeper; they are plain
frozen dataclasses and one enum, built by the engine and its parts.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from micro_rag_mcp.catalog import StoredChunk


@dataclass(frozen=True, slots=True)
class Progress:
    phase: str  # "reading" or "embedding"
    done: int
    total: int
    item: str = ""
    waiting_for: str = ""  # the pass a caller waits for ("start-up"), or "" for its own


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True, slots=True)
class Hit:
    chunk: StoredChunk
    score: float | None  # cosine similarity, None when the chunk has no vector yet
    fused: float
    channels: tuple[str, ...]
    stale: bool = False  # the file on disk no longer matches what was indexed, or is gone


class ModelState(enum.StrEnum):
    """Where the embedding model is: LOADING until a load ends (or first starts), then
    READY or FAILED for good."""

    READY = "ready"
    LOADING = "loading"
    FAILED = "failed"


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
    watch: str = "off"  # how the index follows the folder; see ``watch.Watcher.status``
    queued: int = 0  # changed paths waiting to be refreshed

    @property
    def model_status(self) -> str:
        """``ready``, ``loading`` or ``unavailable: <reason>``, as a client reads it."""
        if self.model is ModelState.FAILED:
            return f"unavailable: {self.model_error}"
        return self.model.value


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
class SearchOutcome:
    hits: list[Hit]
    state: IndexState
    notices: list[str] = field(default_factory=list)
