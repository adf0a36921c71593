"""A client's reindex pass as an object of its own, which calls attach to and leave.

A pass over a large folder takes minutes to hours, while a client waits a minute at most
for a tool call (the TypeScript SDK's default request timeout is 60 s) and may cancel or
go away sooner. So each reindex request becomes a ``ReindexJob``: a thread of its own runs
the pass, and a call follows it so that it answers within ``ANSWER_WITHIN_S``, with the
report or with how far the pass has got. Nothing a call does stops the job: a started
pass runs to its end, or until the store stops (seen between two steps, as for the
server's own passes), so a client that times out never stops a pass half way.

``ReindexJobs`` keeps the jobs of one store in the order asked: a request with the same
arguments as an open job attaches to it; one with other arguments is queued behind the
open ones and begins when they end. A job is what MCP's tasks extension calls a task
(created by a call, polled for its state, waited on for its result), so moving there
maps each request onto one job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from micro_rag_mcp.core.errors import IndexBusy, MicroRagError, Stopped
from micro_rag_mcp.core.results import Progress, ProgressFn, ReindexReport
from micro_rag_mcp.ingest.scanner import PathGlob

logger = logging.getLogger(__name__)

ANSWER_WITHIN_S = 25.0  # a reindex call answers within this, whether or not its pass ended
ANSWER_RESERVE_S = 2.0  # of which the answer itself may take this (counts, transport)
MAX_OPEN = 4  # jobs running or queued at once; a request beyond them is refused as busy
QUEUED = "reindex"  # ``waiting_for`` of a job queued behind another request's pass
POLL_S = 0.25  # how often a queued job looks for a stop

Reindex = Callable[[bool, str | None, ProgressFn], ReindexReport]  # force, path_glob, progress


@dataclass(frozen=True, slots=True)
class JobState:
    """A job as a call sees it: how far it is while ``running``, else how it ended."""

    running: bool
    progress: Progress | None  # the latest; None before the pass's first step
    report: ReindexReport | None  # once it ended with a report
    error: Exception | None  # once it ended with an error
    elapsed_ms: int  # since the request

    @property
    def embedded(self) -> int:
        """Chunks this pass has given a vector so far (none while it waits for another)."""
        p = self.progress
        if p is None or p.waiting_for:
            return 0
        return p.done if p.phase == "embedding" else p.embedded


class ReindexJob:
    """One requested pass, run in a thread of its own from the moment it is made."""

    def __init__(
        self,
        force: bool,
        path_glob: str | None,
        reindex: Reindex,
        after: ReindexJob | None,
        closed: threading.Event,
    ) -> None:
        self.force = force
        self.path_glob = path_glob
        self._reindex = reindex
        self._after = after  # the job queued before this one: this one begins once it ends
        self._closed = closed
        self._news = threading.Condition()  # guards the fields below
        self._version = 0  # counts changes of progress, and the end
        self._progress: Progress | None = None
        self._report: ReindexReport | None = None
        self._error: Exception | None = None
        self._ended = False
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._main, name="micro-rag-reindex", daemon=True)
        self._thread.start()

    def same(self, force: bool, path_glob: str | None) -> bool:
        return self.force == force and self.path_glob == path_glob

    @property
    def ended(self) -> bool:
        return self._ended

    def news(self, seen: int, timeout: float) -> tuple[int, JobState]:
        """Wait at most ``timeout`` s for progress newer than version ``seen``, or the end;
        the version now and the state."""
        with self._news:
            self._news.wait_for(lambda: self._version != seen or self._ended, timeout)
            return self._version, self._state()

    def state(self) -> JobState:
        with self._news:
            return self._state()

    def join(self, timeout: float) -> bool:
        """Wait at most ``timeout`` s for the pass to end; whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _state(self) -> JobState:
        return JobState(
            running=not self._ended,
            progress=self._progress,
            report=self._report,
            error=self._error,
            elapsed_ms=int((time.monotonic() - self._started) * 1000),
        )

    def _main(self) -> None:
        report: ReindexReport | None = None
        error: Exception | None = None
        try:
            if self._after is not None:
                self._wait_for(self._after)
                self._after = None  # ended: no chain of old jobs is kept alive
            report = self._reindex(self.force, self.path_glob, self._publish)
        except Exception as e:  # handed to the calls that follow the job
            error = e
            self._log_error(e)
        finally:
            if report is None and error is None:  # something no caller can act on
                error = Stopped("the reindex pass ended without a report")
            self._end(report, error)
        if report is not None:
            logger.info(
                "reindex%s: %d added, %d updated, %d removed, %d unchanged, %d failed, %d ms",
                self._arguments(),
                report.files_added,
                report.files_updated,
                report.files_removed,
                report.files_unchanged,
                len(report.files_failed),
                report.elapsed_ms,
            )

    def _wait_for(self, before: ReindexJob) -> None:
        """Follow the job queued before this one to its end, showing its progress."""
        seen = 0
        while True:
            seen, state = before.news(seen, POLL_S)
            if self._closed.is_set():
                raise Stopped("the server is stopping")
            if not state.running:
                return
            if state.progress is not None:
                p = state.progress
                self._publish(replace(p, waiting_for=p.waiting_for or QUEUED))

    def _publish(self, p: Progress) -> None:  # called by the pass between two steps
        with self._news:
            self._progress = p
            self._version += 1
            self._news.notify_all()

    def _end(self, report: ReindexReport | None, error: Exception | None) -> None:
        with self._news:
            self._report, self._error, self._ended = report, error, True
            self._version += 1
            self._news.notify_all()

    def _arguments(self) -> str:
        said = [*(["force"] if self.force else []), *([self.path_glob] if self.path_glob else [])]
        return f" ({', '.join(said)})" if said else ""

    def _log_error(self, e: Exception) -> None:
        if isinstance(e, Stopped):
            logger.info("reindex%s stopped: %s", self._arguments(), e)
        elif isinstance(e, MicroRagError):
            logger.warning("reindex%s failed: %s", self._arguments(), e)
        else:
            logger.error("reindex%s failed", self._arguments(), exc_info=e)


class ReindexJobs:
    """The reindex requests of one store: each runs once, in the order asked."""

    def __init__(self, reindex: Reindex, max_open: int = MAX_OPEN) -> None:
        self._reindex = reindex
        self._max_open = max_open
        self._lock = threading.Lock()
        self._open: list[ReindexJob] = []
        self._closed = threading.Event()

    def submit(self, force: bool, path_glob: str | None) -> tuple[ReindexJob, bool]:
        """The job for this request, and whether it was open already (the call joins it).

        A glob is checked here, so a queued request with a bad one fails at once.
        """
        if path_glob is not None:
            PathGlob(path_glob)
        with self._lock:
            if self._closed.is_set():
                raise Stopped("the server is stopping")
            self._open = [job for job in self._open if not job.ended]
            for job in self._open:
                if job.same(force, path_glob):
                    return job, True
            if len(self._open) >= self._max_open:
                raise IndexBusy(
                    f"{len(self._open)} reindex requests with other arguments are running or "
                    "waiting on this server; call again once one of them has ended"
                )
            last = self._open[-1] if self._open else None
            job = ReindexJob(force, path_glob, self._reindex, last, self._closed)
            self._open.append(job)
            return job, False

    def close(self) -> None:
        """Take no more requests; queued ones give up (a running pass ends with its store)."""
        self._closed.set()

    def join(self, timeout: float) -> None:
        """Wait at most ``timeout`` s for every job to end."""
        deadline = time.monotonic() + timeout
        with self._lock:
            jobs = list(self._open)
        for job in jobs:
            if not job.join(max(0.0, deadline - time.monotonic())):
                logger.warning("a reindex pass did not stop within %g s", timeout)
                return
