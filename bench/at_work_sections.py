"""The four sections of ``bench.at_work``, each a list of table rows (see its docstring)."""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import time
from collections.abc import Sequence

import anyio

from bench.at_work_corpus import SETTLE_S, Corpus, copy_folder, restore, settle
from bench.at_work_session import Answer, saved_vectors
from bench.at_work_watch import Changes, make_changes, sample_levels, watch_until
from bench.perf_common import Row

LEVELS = (0.1, 0.5, 0.9)
REINDEX_TIMEOUT_S = 120.0  # a client's patience for the reindex during a first index
PASS_TIMEOUT_S = 3600.0  # a patient client: the forced pass itself is what is measured
CHANGES_TARGET = "<= 2 s (max 5 s)"


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def _times(values: Sequence[float | None], deadline_s: float) -> str:
    got = [v for v in values if v is not None]
    if not values:
        return "none made"
    if not got:
        return f"not within {deadline_s:g} s ({len(values)} of {len(values)})"
    text = f"median {statistics.median(got):.1f} s, max {max(got):.1f} s"
    missed = len(values) - len(got)
    return text + (f"; {missed} of {len(values)} not within {deadline_s:g} s" if missed else "")


def change_rows(name: str, when: str, changes: Changes, deadline_s: float) -> list[Row]:
    """The times of the changes made while a pass ran; those made after it ended, apart."""
    poll = statistics.mean(changes.intervals) if changes.intervals else 0.0
    rows = []
    for label, made in (("created", changes.created), ("deleted", changes.deleted)):
        measured = [c for c in made if not c.never_indexed]
        during = [c.seconds for c in measured if c.during]
        rest = [c.seconds for c in measured if not c.during]
        note = f"{len(during)} of {len(measured)} made while a pass ran"
        if rest:
            note += f" (the rest, made at rest: {_times(rest, deadline_s)})"
        note += f"; each searched every {poll:.2f} s"
        if len(measured) < len(made):
            note += f"; {len(made) - len(measured)} never indexed before their turn"
        value = _times(during, deadline_s) if during else "none made while a pass ran"
        rows.append(
            Row(
                name,
                f"a file {label} {when}: to the search that reflects it",
                value,
                CHANGES_TARGET,
                note,
            )
        )
    return rows


async def first_index(c: Corpus, opts: argparse.Namespace) -> list[Row]:
    """A first index, with changes, a reindex call and identifier samples meanwhile."""
    copy_folder(c.source, c.docs)
    shutil.rmtree(c.index, ignore_errors=True)
    shutil.rmtree(c.snapshot, ignore_errors=True)
    creates = [f"firstc{i:02d}" for i in range(opts.changes)]
    deletes = [f"probe-firstd{i:02d}.txt" for i in range(opts.changes)]
    load = _load()
    got: dict[str, object] = {}
    async with c.serve() as server:

        async def call() -> None:
            await anyio.sleep(1.0)  # the start-up pass has begun
            got["reindex"] = await server.reindex(REINDEX_TIMEOUT_S)

        async def change() -> None:
            got["changes"] = await make_changes(server, c.docs, creates, deletes, opts.deadline)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            tg.start_soon(change)
            levels = await sample_levels(server, c.queries, LEVELS, c.chunks_hint)
    stopped = ""
    if levels.stalled is not None:
        s = levels.stalled
        stopped = f"; then the pass stopped at {s.vectors} of {s.total} vectors (restarted)"
        async with c.serve() as server:
            rest = await sample_levels(server, c.queries, LEVELS[len(levels.samples) :], 0)
        levels.samples += rest.samples
    state, first = await settle(c)
    answer = got["reindex"]
    changes = got["changes"]
    assert isinstance(answer, Answer) and isinstance(changes, Changes)
    rows = change_rows(c.name, "during the first index", changes, opts.deadline)
    rows.append(
        Row(
            c.name,
            "`reindex` called 1 s into the first index: answered after",
            f"{answer.seconds:.1f} s",
            "<= 25 s",
            f"client timeout {REINDEX_TIMEOUT_S:g} s; {answer.summary()}{stopped}",
        )
    )
    for sample in levels.samples:
        rows.append(
            Row(
                c.name,
                f"identifier first at ~{sample.level:.0%} of vectors",
                f"{sample.first} of {sample.searched}",
                "as at 100 %",
                f"share {sample.share_from:.2f}-{sample.share_to:.2f} while searched; "
                f"{min(sample.read, 1.0):.0%} of the chunks read by then",
            )
        )
    if c.queries:
        rows.append(
            Row(c.name, "identifier first at 100 % of vectors", f"{first} of {len(c.queries)}")
        )
    rows.append(
        Row(
            c.name,
            "first index until idle",
            f"{levels.seconds:.0f} s",
            "",
            f"{state.total} chunks, {state.raw.get('files_indexed')} files; {load} at start, "
            f"{_load()} at end",
        )
    )
    return rows


async def forced(c: Corpus, opts: argparse.Namespace) -> list[Row]:
    """``reindex(force: true)`` on the complete index, with changes meanwhile."""
    restore(c)
    creates = [f"forcedc{i:02d}" for i in range(opts.changes)]
    deletes = c.snapshot_probes()[: opts.changes]
    load = _load()
    got: dict[str, object] = {}
    async with c.serve() as server:
        before = await server.wait_idle(SETTLE_S)

        async def call() -> None:
            got["reindex"] = await server.reindex(PASS_TIMEOUT_S, force=True)

        async def change() -> None:
            await anyio.sleep(1.0)  # the pass has begun
            got["changes"] = await make_changes(server, c.docs, creates, deletes, opts.deadline)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            tg.start_soon(change)
            watch = await watch_until(
                server, c.queries, lambda s: "reindex" in got and s.idle, PASS_TIMEOUT_S
            )
    answer, changes = got["reindex"], got["changes"]
    assert isinstance(answer, Answer) and isinstance(changes, Changes)
    embedded = (answer.result or {}).get("chunks_embedded")
    so_far = " so far (the pass went on)" if answer.running else ""
    stalled = f"; stalled at {watch.stalled.vectors}" if watch.stalled else ""
    rows = [
        Row(
            c.name,
            "forced pass: lowest share of chunks with a vector",
            f"{watch.lowest_share:.2f}",
            ">= 0.99",
            f"{before.vectors} of {before.total} before; at most {watch.most_missing} "
            f"without{stalled}",
        ),
        Row(
            c.name,
            "forced pass: chunks embedded, as its reindex answer says",
            f"{embedded}{so_far}",
            "",
            f"answered after {answer.seconds:.1f} s: {answer.summary()}; idle after "
            f"{watch.seconds:.0f} s; {load} at start",
        ),
    ]
    if c.queries:
        rows.append(
            Row(
                c.name,
                "forced pass: identifier first during the pass",
                f"{watch.first} of {watch.searched}",
                "as at 100 %",
            )
        )
    return rows + change_rows(c.name, "during a forced pass", changes, opts.deadline)


def _moved(path: str, folder: str, moved: str) -> str:
    return moved + path[len(folder) :] if path.startswith(folder + "/") else path


async def move(c: Corpus, opts: argparse.Namespace) -> list[Row]:
    """A subfolder renamed while the server watches."""
    restore(c)
    moved = f"{c.move}-moved"
    files = sum(1 for p in (c.docs / c.move).rglob("*") if p.is_file())
    queries = [(q, _moved(p, c.move, moved)) for q, p in c.queries]
    old, new = f"{c.move}/probe-move.txt", f"{moved}/probe-move.txt"
    found: dict[str, float | None] = {}
    async with c.serve() as server:
        before = await server.wait_idle(SETTLE_S)

        async def find(begun: float) -> None:
            while time.monotonic() - begun < PASS_TIMEOUT_S:
                paths, _ = await server.search("qxvmove")
                if new in paths and old not in paths:
                    found["s"] = time.monotonic() - begun
                    return
                await anyio.sleep(0.1)
            found["s"] = None

        async with anyio.create_task_group() as tg:
            os.rename(c.docs / c.move, c.docs / moved)
            tg.start_soon(find, time.monotonic())
            watch = await watch_until(
                server, queries, lambda s: "s" in found and s.idle, PASS_TIMEOUT_S
            )
    seconds = found.get("s")
    what = f"move {files} files ({c.move}/)"
    stalled = f"; stalled at {watch.stalled.vectors}" if watch.stalled else ""
    rows = [
        Row(
            c.name,
            f"{what}: lowest share of chunks with a vector",
            f"{watch.lowest_share:.2f}",
            ">= 0.99",
            f"{before.vectors} of {before.total} before{stalled}",
        ),
        Row(
            c.name,
            f"{what}: chunks without a vector at most (embedded again)",
            f"{watch.most_missing}",
            "0",
            f"idle {watch.seconds:.0f} s after the move; {_load()}",
        ),
        Row(
            c.name,
            f"{what}: found at the new path",
            "not found" if seconds is None else f"{seconds:.1f} s",
            "<= 5 s",
            "a probe file in the moved folder, searched every 0.1 s",
        ),
    ]
    if c.queries:
        rows.append(
            Row(
                c.name,
                f"{what}: identifier first until idle (new paths)",
                f"{watch.first} of {watch.searched}",
                "as at 100 %",
            )
        )
    return rows


async def interrupted(c: Corpus, opts: argparse.Namespace) -> list[Row]:
    """Forced passes stopped at a random instant; the vectors the saved index keeps."""
    rnd = random.Random(opts.seed)
    kinds = ("kill", "close") if opts.interrupt == "both" else (opts.interrupt,)
    tries: dict[str, list[str]] = {k: [] for k in kinds}
    kept: dict[str, list[tuple[int, int]]] = {k: [] for k in kinds}
    for i in range(opts.tries):
        kind, delay = kinds[i % len(kinds)], rnd.uniform(1.0, 20.0)
        restore(c)
        got: dict[str, Answer] = {}
        # The task group outlives the client: leaving it closes the client's pipe while the
        # reindex call still waits (a client going away), then the call sees the end.
        async with anyio.create_task_group() as tg, c.serve() as server:
            before = await server.wait_idle(SETTLE_S)

            async def call() -> None:
                got["a"] = await server.reindex(PASS_TIMEOUT_S, force=True)  # noqa: B023

            tg.start_soon(call)
            await anyio.sleep(delay)
            if kind == "kill":
                server.kill()
        _, saved = saved_vectors(c.docs, c.index)
        answer = got.get("a")
        ended = " (answered first)" if answer and answer.result is not None else ""
        tries[kind].append(f"{delay:.1f} s: {saved}/{before.vectors}{ended}")
        kept[kind].append((saved, before.vectors))
    rows = []
    for kind in (k for k in kinds if kept[k]):
        how = "SIGKILL of the server" if kind == "kill" else "the client closing its pipe"
        left = [k for k, _ in kept[kind]]
        whole = sum(k >= b for k, b in kept[kind])
        rows.append(
            Row(
                c.name,
                f"forced pass stopped by {how} 1-20 s in: vectors left (saved index)",
                f"min {min(left)}, median {statistics.median(left):.0f} of "
                f"{max(b for _, b in kept[kind])}",
                "all it started with",
                f"{whole} of {len(left)} tries kept all; " + "; ".join(tries[kind]),
            )
        )
    return rows


SECTION_RUNS = {"first": first_index, "forced": forced, "move": move, "interrupted": interrupted}
