"""The tools' results as a client receives them: pydantic models, and the conversions
from the core's values (``results``).

The server returns these; the command line prints the same ones for ``--json``, so both
say exactly the same thing. Nothing here imports ``mcp``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, Field

from micro_rag_mcp.core.records import SkipGroup, SkipReason
from micro_rag_mcp.core.results import Hit, IndexState, ReindexReport, SearchOutcome
from micro_rag_mcp.core.shown import shown
from micro_rag_mcp.ingest.scanner import UNCLOSED_CLASS, unclosed_class
from micro_rag_mcp.ingest.skipped import EXAMPLES
from micro_rag_mcp.search.duplicates import SHOWN, place
from micro_rag_mcp.serve.jobs import JobState
from micro_rag_mcp.serve.resource_uri import resource_uri
from micro_rag_mcp.text.anchors import make_anchor

_NO_LINES = "null for PDF and table formats"
LineStart = Annotated[
    int | None, Field(description=f"First line (1-based) of the extracted text; {_NO_LINES}.")
]
LineEnd = Annotated[
    int | None, Field(description=f"Last line (1-based) of the extracted text; {_NO_LINES}.")
]


def wire(result: BaseModel) -> dict[str, Any]:
    """A result as the tool's structured content: JSON types, wire names."""
    return result.model_dump(mode="json", by_alias=True)


class SearchHit(BaseModel):
    path: str = Field(description="File path relative to the data folder, '/' separators.")
    score: float | None = Field(
        description="Cosine similarity of the passage to the query (0-1); null when the "
        "passage has no vector yet and was found by keyword only."
    )
    snippet: str = Field(description="The passage text (a chunk of the document).")
    chunk_index: int = Field(description="0-based index of the chunk within its file.")
    char_start: int = Field(description="Offset of the passage in the file's extracted text.")
    char_end: int = Field(description="End offset (exclusive) in the extracted text.")
    mtime: float = Field(description="File modification time, seconds since the epoch.")
    ext: str = Field(description="File extension, lower case, with the dot.")
    line_start: LineStart = None
    line_end: LineEnd = None
    page: int | None = Field(
        None, description="Page (1-based) where the passage starts: a PDF's, a TIFF's frame."
    )
    matched_by: list[str] = Field(description="Channels that found it: 'vector', 'keyword'.")
    rank: int = Field(description="1-based position in this result list.")
    relevance: float = Field(
        description="The ranking key: the fused relevance of both channels (0-1), relative "
        "to this query's best candidates (see no_good_match for an absolute signal); "
        "results are ordered by it, so score (the cosine alone) need not decrease."
    )
    section: str | None = Field(
        None,
        description="Heading path where the passage starts, e.g. 'Chapter 2 › Results' "
        "(Markdown, reST, HTML, DOCX headings, EPUB chapters, slide titles, PDF outline); "
        "null when none.",
    )
    locator: str | None = Field(
        None,
        description="Where the passage is in the file's own terms, e.g. 'slide 4', "
        "'sheet \"Q3\" rows 12–30', 'rows 2–14', 'cells 3–5', 'attachment \"a.pdf\" page 2'; "
        "'OCR' when its text was recognized in a scan; null when lines or page say it.",
    )
    stale: bool = Field(
        description="The file changed on disk (or is gone) since this passage was indexed; "
        "search again in a moment for its current text, or call reindex."
    )
    anchor: str = Field(
        description="A citation made from the passage's own words: pass it to read (with "
        "path) to find the passage again after the file changed."
    )
    resource: str = Field(description="The file's resource URI (resources/read, subscribe).")
    snippet_cut: bool = Field(
        False,
        description="The snippet is the passage's start, cut to keep the answer within "
        "max_chars: read path from char_start to char_end for the whole passage.",
    )
    repeated: Repeated | None = Field(
        None, description="The same passage found elsewhere, folded into this result; null if none."
    )


class Repeated(BaseModel):
    count: int = Field(description="How many other places hold the same passage.")
    places: list[str] = Field(
        description=f"The first {SHOWN} of them, best first: path and page, locator or lines."
    )


class SkippedEntries(BaseModel):
    reason: SkipReason = Field(
        description="Why they are not indexed: 'symlink outside the folder', 'broken "
        "symlink' (to nothing, or to itself), 'not a regular file' (a FIFO, device or "
        "socket) or 'name not valid UTF-8'."
    )
    count: int = Field(description="How many entries of the folder were skipped for it.")
    examples: list[str] = Field(
        description=f"The first {EXAMPLES} of their paths, relative to the data folder (a "
        "byte that is not UTF-8 shown as \\xff)."
    )


def skipped_entries(groups: Sequence[SkipGroup]) -> list[SkippedEntries]:
    return [
        SkippedEntries(reason=g.reason, count=g.count, examples=list(g.examples)) for g in groups
    ]


class IndexStatus(BaseModel):
    indexing: bool = Field(description="A reindex is running (here or in another process).")
    phase: str | None = Field(
        None,
        description="'reading' or 'embedding' while indexing; null (or 'starting', for "
        "another process) until the pass has read its first file.",
    )
    done: int | None = Field(None, description="Items done in the current phase.")
    total: int | None = Field(None, description="Items in the current phase.")
    files_indexed: int
    files_failed: int
    chunks_total: int
    chunks_with_vectors: int
    model: str = Field(description="'ready', 'loading' or 'unavailable: <reason>'.")
    watch: str = Field(
        description="How the index follows the folder: 'starting' (for a moment after the "
        "start), 'watching', 'polling every N s', "
        "'standby: another process watches this folder', 'off here: another process watches "
        "this folder' (this process does not watch; another does) or 'off'."
    )
    queued: int = Field(description="Changed files and folders waiting to be reindexed.")
    skipped: list[SkippedEntries] = Field(
        default_factory=list,
        description="Entries of an indexed type that the scans of the folder leave out, by "
        "reason; empty when none.",
    )


class AnswerCut(BaseModel):
    max_chars: int = Field(description="The answer's budget of characters (max_chars).")
    snippet_chars: int | None = Field(
        description="Snippets longer than this were cut to it (snippet_cut); null: none."
    )
    results_left_out: int = Field(
        description="Results found but left out from the end of the list to keep the budget."
    )


class SearchResult(BaseModel):
    results: list[SearchHit]
    no_good_match: bool = Field(
        False,
        description="True when no result holds the query's rare words and none is close in "
        "meaning (an absolute test, where relevance is relative to the best result): the "
        "folder probably does not hold what was asked.",
    )
    index: IndexStatus = Field(description="State of the index when the search ran.")
    notices: list[str] = Field(
        description="Why results may be incomplete (still indexing, model loading, ...)."
    )
    cut: AnswerCut | None = Field(
        None,
        description="What was cut to keep the answer within max_chars (the text and "
        "structured content together); null when nothing was.",
    )


class FailedFile(BaseModel):
    path: str
    reason: str


_WHEN_ENDED = "; null while running (known when the pass ends)"


class ReindexResult(BaseModel):
    running: bool = Field(
        description="The pass had not ended when the call answered: it goes on in the "
        "background, phase, done and total say how far it is, and the counts that are null "
        "come when it ends. Call reindex again with the same arguments to follow the same "
        "pass; false: the pass has ended and the counts are final."
    )
    joined: bool = Field(
        description="This call joined a pass already requested with the same arguments "
        "(running or waiting) instead of starting another."
    )
    phase: str | None = Field(
        default=None,
        description="While running: 'reading' or 'embedding' (of the pass named by "
        "waiting_for, while this one waits for it); null once ended, or before its first step.",
    )
    done: int | None = Field(default=None, description="While running: items done in the phase.")
    total: int | None = Field(default=None, description="While running: items in the phase.")
    waiting_for: str | None = Field(
        default=None,
        description="While running: 'start-up', 'refresh' or 'reindex' (another request) "
        "when this pass waits for that one to end before it begins (a plain reindex may be "
        "answered by it); phase, done and total are then that pass's; \"other process's\" "
        "while another process writes the index (its counts unknown here). Null otherwise.",
    )
    files_added: int | None = Field(description="Files indexed for the first time" + _WHEN_ENDED)
    files_updated: int | None = Field(description="Files whose text changed" + _WHEN_ENDED)
    files_removed: int | None = Field(description="Files gone from the folder" + _WHEN_ENDED)
    files_unchanged: int | None = Field(description="Files skipped" + _WHEN_ENDED)
    files_failed: list[FailedFile] | None = Field(
        description="Files in scope that cannot be indexed, with the reason; they are "
        "retried only once they change" + _WHEN_ENDED
    )
    chunks_total: int = Field(description="Passages in the whole index (so far, while running).")
    chunks_embedded: int = Field(description="Passages given a vector by the pass (so far).")
    elapsed_ms: int = Field(
        description="How long the pass took (while running: the time since it was requested)."
    )
    notices: list[str] = Field(
        description="What the counts alone do not say, such as a path_glob that matched no file."
    )


def _status(state: IndexState) -> IndexStatus:
    return IndexStatus(
        indexing=state.indexing,
        phase=state.phase,
        done=state.done,
        total=state.total,
        files_indexed=state.files_indexed,
        files_failed=state.files_failed,
        chunks_total=state.chunks_total,
        chunks_with_vectors=state.chunks_with_vectors,
        model=state.model_status,
        watch=state.watch,
        queued=state.queued,
        skipped=skipped_entries(state.skipped),
    )


def _hit(hit: Hit, rank: int) -> SearchHit:
    c = hit.chunk
    return SearchHit(
        path=c.path,
        score=None if hit.score is None else round(hit.score, 4),
        snippet=c.text,
        chunk_index=c.chunk_index,
        char_start=c.char_start,
        char_end=c.char_end,
        mtime=c.mtime_ns / 1e9,
        ext=c.ext,
        line_start=c.line_start,
        line_end=c.line_end,
        page=c.page,
        matched_by=list(hit.channels),
        rank=rank,
        relevance=round(hit.fused, 4),
        section=c.section,
        locator=c.locator,
        stale=hit.stale,
        anchor=make_anchor(c.text, c.char_start, *hit.context),
        resource=resource_uri(c.path),
        snippet_cut=False,
        repeated=Repeated(count=hit.repeats, places=[place(o) for o in hit.elsewhere])
        if hit.repeats
        else None,
    )


def search_result(outcome: SearchOutcome) -> SearchResult:
    return SearchResult(
        results=[_hit(h, rank) for rank, h in enumerate(outcome.hits, 1)],
        no_good_match=outcome.no_good_match,
        index=_status(outcome.state),
        notices=outcome.notices,
        cut=None,
    )


def reindex_result(
    report: ReindexReport,
    path_glob: str | None = None,
    exts: Sequence[str] = (),
    *,
    joined: bool = False,
    glob_name: str = "path_glob",
) -> ReindexResult:
    """The result of a pass that has ended; ``glob_name``: what the caller called the glob
    (``--glob``)."""
    return ReindexResult(
        running=False,
        joined=joined,
        files_added=report.files_added,
        files_updated=report.files_updated,
        files_removed=report.files_removed,
        files_unchanged=report.files_unchanged,
        files_failed=[FailedFile(path=p, reason=r) for p, r in report.files_failed],
        chunks_total=report.chunks_total,
        chunks_embedded=report.chunks_embedded,
        elapsed_ms=report.elapsed_ms,
        notices=_reindex_notices(report, path_glob, exts, glob_name),
    )


def running_result(
    job: JobState, index: IndexState, within_s: float, *, joined: bool = False
) -> ReindexResult:
    """The answer of a call whose pass had not ended within ``within_s`` seconds."""
    p = job.progress
    if p is None:
        where = "it has not begun its first step"
    elif p.waiting_for:
        where = f"it waits for the {p.waiting_for} pass ({p.phase} {p.done}/{p.total})"
    else:
        where = f"{p.phase} {p.done}/{p.total}"
    notice = (
        f"the pass is still running ({where}) and goes on in the background; call reindex "
        f"again with the same arguments to follow it (each call answers within {within_s:g} "
        "s), and search meanwhile (it says indexing is running)"
    )
    return ReindexResult(
        running=True,
        joined=joined,
        phase=p.phase if p is not None else None,
        done=p.done if p is not None else None,
        total=p.total if p is not None else None,
        waiting_for=(p.waiting_for or None) if p is not None else None,
        files_added=None,
        files_updated=None,
        files_removed=None,
        files_unchanged=None,
        files_failed=None,
        chunks_total=index.chunks_total,
        chunks_embedded=job.embedded,
        elapsed_ms=job.elapsed_ms,
        notices=[notice],
    )


def _reindex_notices(
    report: ReindexReport, path_glob: str | None, exts: Sequence[str], glob_name: str
) -> list[str]:
    """An empty scope is a legitimate answer, but one a caller should not have to infer."""
    seen = report.files_added + report.files_updated + report.files_removed
    if path_glob is None or seen + report.files_unchanged or report.files_failed:
        return []
    notice = (
        f"{glob_name} {shown(path_glob)} matches no file of the {len(exts)} indexed types "
        "(--exts) in the data folder; nothing was read or removed"
    )
    if unclosed_class(path_glob):
        notice += UNCLOSED_CLASS
    return [notice]
