"""What ``bench.at_work`` watches while the index works: changes made to the folder, the
share of chunks with a vector, and whether identifiers rank their file first.

A change is timed from the moment the file is written (or deleted) to the answer of the
first search that reflects it: the file's path among the results of a search for its
token, or no longer among them. Every outstanding change is searched once per round and
a round starts ``POLL_S`` after the last one ended, so the interval between two searches
for one change is ``POLL_S`` plus one search per change outstanding; the mean is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from bench.at_work_session import Server, State

POLL_S = 0.1
STALLED_S = 20.0  # chunks lack vectors and nothing runs this long: the pass gave up


def probe_token(label: str) -> str:
    """One word no note or document holds."""
    return f"qxv{label}"


def probe_text(label: str) -> str:
    return f"Probe note {probe_token(label)}: written by the benchmark while the index works.\n"


@dataclass
class Change:
    """One file created or deleted, and when a search first reflected it."""

    path: str  # relative to the folder
    token: str
    create: bool
    due: float  # seconds after the round of changes began
    started: float | None = None
    during: bool = False  # a pass was running when the change was made
    seconds: float | None = None
    done: bool = False
    never_indexed: bool = False  # a deletion whose file never showed up to be deleted

    def reflected(self, paths: Sequence[str]) -> bool:
        return (self.path in paths) == self.create


@dataclass
class Changes:
    created: list[Change]
    deleted: list[Change]
    intervals: list[float] = field(default_factory=list)  # between two searches of one change


async def make_changes(
    server: Server,
    docs: Path,
    creates: Sequence[str],
    deletes: Sequence[str],
    deadline_s: float,
    every_s: float = 2.0,
) -> Changes:
    """Create ``creates`` (probe labels, as ``probe-<label>.txt``) and delete the files
    ``deletes`` (relative paths of probes the index holds), one every ``every_s / 2`` s
    in turn, and time each until a search reflects it (None: not within ``deadline_s``).

    A file to delete is first searched until the index holds it (at most ``deadline_s``
    past its turn): only then does its deletion say anything.
    """
    created = [
        Change(f"probe-{label}.txt", probe_token(label), True, i * every_s)
        for i, label in enumerate(creates)
    ]
    deleted = [
        Change(
            path, probe_token(Path(path).stem.removeprefix("probe-")), False, (i + 0.5) * every_s
        )
        for i, path in enumerate(deletes)
    ]
    out = Changes(created, deleted)
    begun = time.monotonic()
    last_search: dict[int, float] = {}
    while not all(c.done for c in created + deleted):
        elapsed = time.monotonic() - begun
        for c in created + deleted:
            if c.started is None and not c.done and c.due <= elapsed:
                await _start(server, docs, c, elapsed - c.due > deadline_s)
        for c in created + deleted:
            if c.started is None or c.done:
                continue
            paths, _ = await server.search(c.token)
            now = time.monotonic()
            if id(c) in last_search:
                out.intervals.append(now - last_search[id(c)])
            last_search[id(c)] = now
            if c.reflected(paths):
                c.seconds, c.done = now - c.started, True
            elif now - c.started > deadline_s:
                c.done = True
        await anyio.sleep(POLL_S)
    return out


async def _start(server: Server, docs: Path, c: Change, late: bool) -> None:
    during = bool(server.last and server.last.indexing)
    if c.create:
        (docs / c.path).write_text(probe_text(c.token.removeprefix("qxv")), encoding="utf-8")
    else:
        paths, state = await server.search(c.token)
        if c.path not in paths:
            c.never_indexed = c.done = late
            return
        during = state.indexing
        (docs / c.path).unlink()
    c.started, c.during = time.monotonic(), during


@dataclass
class Sample:
    """Identifier queries searched once each, and the share of vectors around them."""

    level: float
    share_from: float
    share_to: float
    first: int
    searched: int
    read: float = 1.0  # the share of the folder's chunks in the catalog (read) meanwhile


async def top1(server: Server, queries: Sequence[tuple[str, str]]) -> tuple[int, State]:
    hits = 0
    state = server.last
    for query, want in queries:
        paths, state = await server.search(query)
        hits += bool(paths) and paths[0] == want
    assert state is not None
    return hits, state


@dataclass
class Levels:
    samples: list[Sample]
    stalled: State | None  # the pass gave up here (no vector is coming)
    seconds: float  # until idle (or stalled)


async def sample_levels(
    server: Server,
    queries: Sequence[tuple[str, str]],
    levels: Sequence[float],
    expected_chunks: int,
) -> Levels:
    """Until the index is idle: each time the share of vectors first reaches a level,
    search every identifier query once. The share counts against ``expected_chunks`` as
    well (chunks still to be read have no vector either)."""
    begun = time.monotonic()
    pending = list(levels)
    samples: list[Sample] = []
    stopped_since: float | None = None
    while True:
        state = await server.state()
        share = state.vectors / max(state.total, expected_chunks, 1)
        if pending and queries and share >= pending[0]:
            hits, after = await top1(server, queries)
            share_to = after.vectors / max(after.total, expected_chunks, 1)
            read = after.total / max(expected_chunks, 1)
            samples.append(Sample(pending.pop(0), share, share_to, hits, len(queries), read))
            continue
        now = time.monotonic()
        if state.idle:
            return Levels(samples, None, now - begun)
        stopped_since = (stopped_since or now) if state.stopped else None
        if stopped_since is not None and now - stopped_since > STALLED_S:
            return Levels(samples, state, now - begun)
        await anyio.sleep(0.25)


@dataclass
class Watch:
    """What searches saw while a long change ran."""

    lowest_share: float = 1.0
    most_missing: int = 0  # chunks without a vector, at most
    first: int = 0
    searched: int = 0
    stalled: State | None = None
    seconds: float = 0.0


async def watch_until(
    server: Server,
    queries: Sequence[tuple[str, str]],
    done: Callable[[State], bool],
    timeout_s: float,
) -> Watch:
    """Search the identifier queries in turn, ``POLL_S`` apart (or the state alone, with
    none), until ``done(state)``, a stall, or ``timeout_s``."""
    watch = Watch()
    begun = time.monotonic()
    stopped_since: float | None = None
    turn = 0
    while True:
        if queries:
            query, want = queries[turn % len(queries)]
            turn += 1
            paths, state = await server.search(query)
            watch.first += bool(paths) and paths[0] == want
            watch.searched += 1
        else:
            state = await server.state()
        await anyio.sleep(POLL_S)  # a person searching often, not a load test
        watch.lowest_share = min(watch.lowest_share, state.share)
        watch.most_missing = max(watch.most_missing, state.missing)
        now = time.monotonic()
        watch.seconds = now - begun
        if done(state) or watch.seconds > timeout_s:
            return watch
        stopped_since = (stopped_since or now) if state.stopped else None
        if stopped_since is not None and now - stopped_since > STALLED_S:
            watch.stalled = state
            return watch
