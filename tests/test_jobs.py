"""Reindex requests as jobs: joined, queued, refused, stopped; a pass stand-in held by Events."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest

from micro_rag_mcp.core.errors import IndexBusy, InvalidArgument, MicroRagError, Stopped
from micro_rag_mcp.core.results import Progress, ProgressFn, ReindexReport
from micro_rag_mcp.serve.jobs import QUEUED, JobState, ReindexJob, ReindexJobs
from tests.waiting import DEADLINE_S, eventually


@dataclass
class HeldPasses:
    """A reindex stand-in: each pass reports one step, then waits for ``release`` (or
    ``stop``, which ends it with ``Stopped``, as a stopping store does)."""

    release: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    begun: list[tuple[bool, str | None]] = field(default_factory=list)
    fail_with: MicroRagError | None = None

    def __call__(self, force: bool, path_glob: str | None, progress: ProgressFn) -> ReindexReport:
        self.begun.append((force, path_glob))
        progress(Progress("reading", 1, 3, "a.txt"))
        while not self.release.wait(0.01):
            if self.stop.is_set():
                raise Stopped("the server is stopping")
        if self.fail_with is not None:
            raise self.fail_with
        return ReindexReport(3, 0, 0, 0, [], 3, 3, 5)


def ended(job: ReindexJob) -> JobState:
    assert job.join(DEADLINE_S), "the job never ended"
    return job.state()


def test_a_request_with_the_same_arguments_joins_the_open_job() -> None:
    passes = HeldPasses()
    jobs = ReindexJobs(passes)
    first, joined_first = jobs.submit(True, "notes/**")
    again, joined_again = jobs.submit(True, "notes/**")
    assert (joined_first, joined_again) == (False, True) and again is first
    eventually(lambda: first.state().progress is not None, "the pass reported a step")
    passes.release.set()
    state = ended(first)
    assert not state.running and state.report is not None and state.report.files_added == 3
    assert passes.begun == [(True, "notes/**")]  # one pass for both requests
    after, joined = jobs.submit(True, "notes/**")  # the job has ended: a new pass
    assert after is not first and not joined
    ended(after)


def test_a_request_with_other_arguments_waits_for_the_open_one_showing_its_progress() -> None:
    passes = HeldPasses()
    jobs = ReindexJobs(passes)
    first, _ = jobs.submit(False, None)
    queued, joined = jobs.submit(True, None)
    assert not joined and queued is not first
    eventually(lambda: queued.state().progress is not None, "the queued job shows progress")
    shown = queued.state()
    assert shown.progress == Progress("reading", 1, 3, "a.txt", waiting_for=QUEUED)
    assert shown.embedded == 0  # the progress is the other pass's
    assert passes.begun == [(False, None)]  # the queued pass has not begun
    passes.release.set()
    ended(first)
    assert ended(queued).report is not None
    assert passes.begun == [(False, None), (True, None)]


def test_requests_beyond_the_open_limit_are_busy_and_a_bad_glob_is_refused_at_once() -> None:
    passes = HeldPasses()
    jobs = ReindexJobs(passes, max_open=2)
    first, _ = jobs.submit(False, None)
    jobs.submit(False, "a/**")
    with pytest.raises(IndexBusy, match="2 reindex requests with other arguments"):
        jobs.submit(False, "b/**")
    assert jobs.submit(False, "a/**")[1]  # the same arguments still join
    with pytest.raises(InvalidArgument):
        jobs.submit(False, "../*")
    passes.release.set()
    jobs.join(DEADLINE_S)
    assert first.ended


def test_an_error_of_the_pass_is_handed_to_its_followers() -> None:
    passes = HeldPasses(fail_with=MicroRagError("the index folder is read-only"))
    jobs = ReindexJobs(passes)
    job, _ = jobs.submit(False, None)
    passes.release.set()
    state = ended(job)
    assert isinstance(state.error, MicroRagError) and state.report is None


def test_closing_gives_up_queued_requests_and_the_running_pass_ends_with_its_store() -> None:
    passes = HeldPasses()
    jobs = ReindexJobs(passes)
    running, _ = jobs.submit(False, None)
    queued, _ = jobs.submit(True, None)
    jobs.close()
    with pytest.raises(Stopped):
        jobs.submit(False, None)
    passes.stop.set()  # the store stops: its pass ends at its next step
    jobs.join(DEADLINE_S)
    assert isinstance(ended(running).error, Stopped)
    assert isinstance(ended(queued).error, Stopped)
    assert passes.begun == [(False, None)]  # the queued pass never began


def test_a_follower_sees_news_and_the_end() -> None:
    passes = HeldPasses()
    job, _ = ReindexJobs(passes).submit(False, None)
    seen, state = job.news(0, DEADLINE_S)
    assert state.running and state.progress is not None and seen > 0
    passes.release.set()
    while state.running:
        seen, state = job.news(seen, DEADLINE_S)
    assert state.report is not None
