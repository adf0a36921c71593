"""Many sessions on one folder while it changes, and while the service is killed.

The real ``micro-rag-mcp`` over stdio, ``SESSIONS`` launches on each folder (made by
``many_clients.make_folder`` if missing). Measured:

- an edit seen by every session: a note is written (or changed) and each session
  searches for its new word until the note is found; the seconds each took, through the
  service and with ``--standalone`` (one process, one watcher per launch);
- ``kill -9`` of the service at ``--kills`` random instants, while the folder changes
  (notes written, changed, removed) and every session searches: after each kill, every
  session's next request must work (after at most one "send it again" error); at the
  end every index must hold what a clean build of its folder holds (the same files with
  the same checksums, the same chunks, every chunk with its vector);
- search p50/p99 through a relay against a standalone server, taking turns.

    .venv/bin/python -m bench.many_clients_live --work <work>/live --notes 200
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.many_clients import SESSIONS, Launch, make_folder, search_row, service_pids
from bench.perf_common import Row, print_table

GONE = -32603  # the relay's "the service stopped: send the request again"
POLL_S = 0.2  # between one session's searches for an edit (``--poll``)


def found(launch: Launch, word: str, name: str) -> bool:
    hits = launch.search(word)["results"]
    return any(hit["path"] == name for hit in hits)


def edits(data: Path, env: dict[str, str], trials: int, every: float, *flags: str) -> list[float]:
    """Seconds from each write to each session's first search that finds it."""
    launches = [Launch(data, env, *flags) for _ in range(SESSIONS)]
    for launch in launches:
        launch.initialize()
    for launch in launches:
        launch.wait_idle()
    seconds: list[float] = []
    mode = ("alone" if flags else "shared") + random.choice("abcdefgh") + str(time.time_ns())
    for trial in range(trials):
        word = f"quokka{mode}x{trial}x"  # new to the folder on each run
        if trial % 2 == 0:  # a new note
            name = f"edit-{mode}-{trial}.md"
            (data / name).write_text(f"# Edit {trial}\n\nA {word} crossed the field.\n")
        else:  # an existing note, changed
            name = f"note{trial:05d}.md"
            with (data / name).open("a") as f:
                f.write(f"\nLater a {word} was seen here.\n")
        written = time.perf_counter()
        threads = [
            threading.Thread(target=poll, args=(x, word, name, written, seconds, every))
            for x in launches
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for launch in launches:
        launch.close()
    return seconds


def poll(
    launch: Launch, word: str, name: str, written: float, took: list[float], every: float
) -> None:
    """Search until ``name`` is found (a minute at most); add the seconds it took."""
    deadline = time.monotonic() + 60
    while not found(launch, word, name) and time.monotonic() < deadline:
        time.sleep(every)
    took.append(time.perf_counter() - written)


def hammer(launch: Launch, stop: threading.Event, rng: random.Random, outcomes: list[str]) -> None:
    """Search until ``stop`` is set; each answer's kind goes to ``outcomes``."""
    while not stop.is_set():
        outcomes.append(attempt(launch, f"wombat season {rng.randrange(3)}"))


def attempt(launch: Launch, query: str) -> str:
    """``ok``, ``gone`` (the relay's send-again error) or the other error's text."""
    answer = launch.call("tools/call", {"name": "search", "arguments": {"query": query}})
    if "error" in answer:
        return "gone" if answer["error"]["code"] == GONE else json.dumps(answer["error"])
    if answer["result"].get("isError"):
        return str(answer["result"]["content"][0]["text"])
    return "ok"


def churn(data: Path, rng: random.Random, round_: int) -> None:
    """Write three notes, change two, remove one: a pass for the service to run."""
    for k in range(3):
        text = f"# Churn {round_}.{k}\n\nA wombat{round_}x{k} in the {rng.random()}.\n"
        (data / f"churn{round_:02d}-{k}.md").write_text(text)
    notes = sorted(data.glob("note*.md"))
    for note in rng.sample(notes, 2):
        with note.open("a") as f:
            f.write(f"\nRound {round_} changed this.\n")
    old = sorted(data.glob("churn*.md"))
    if len(old) > 6:
        old[0].unlink()


def kills(folders: list[Path], env: dict[str, str], rounds: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    runtime = Path(env["MICRO_RAG_RUNTIME_DIR"])
    launches = [Launch(data, env) for data in folders for _ in range(SESSIONS)]
    for launch in launches:
        launch.initialize()
    for launch in launches:
        launch.wait_idle()
    recovered, gone, failures = 0, 0, []
    outcomes: list[str] = []  # of the searches running while the service is killed
    for round_ in range(rounds):
        stop = threading.Event()
        threads = [threading.Thread(target=hammer, args=(x, stop, rng, outcomes)) for x in launches]
        for thread in threads:
            thread.start()
        if round_ % 2 == 0:  # while indexing: the change starts a pass
            for data in folders:
                churn(data, rng, round_)
        time.sleep(rng.uniform(0.0, 3.0))
        for pid in service_pids(runtime):
            os.kill(pid, signal.SIGKILL)
        stop.set()
        for thread in threads:
            thread.join()
        ok = True
        for launch in launches:
            first = attempt(launch, "glacier climate")
            if first == "gone":
                gone += 1
                first = attempt(launch, "glacier climate")
            if first != "ok":
                ok = False
                failures.append(first)
        recovered += ok
    for launch in launches:
        launch.wait_idle()
    views = [launch.search("ping")["index"] for launch in launches]
    for launch in launches:
        launch.close()
    converged = 0
    for i, data in enumerate(folders):
        fresh = Path(tempfile.mkdtemp(prefix="mrb-fresh-"))
        cli = [sys.executable, "-m", "micro_rag_mcp.cli.app", "index", str(data)]
        subprocess.run(
            [*cli, "--index-folder", str(fresh)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**env, "MICRO_RAG_STANDALONE": "1"},
        )
        view = views[i * SESSIONS]
        whole = view["chunks_with_vectors"] == view["chunks_total"]
        converged += whole and contents(data / "index") == contents(fresh)
        shutil.rmtree(fresh)
    return {
        "rounds": rounds,
        "recovered": recovered,
        "gone": gone,
        "during": {kind: outcomes.count(kind) for kind in ("ok", "gone")},
        "other": [o for o in outcomes if o not in ("ok", "gone")][:3],
        "failures": failures[:3],
        "converged": converged,
        "folders": len(folders),
    }


def contents(index: Path) -> tuple[list[tuple[str, str, str]], list[tuple[str, int, str]]]:
    """An index's files (path, checksum, status) and chunks (path, number, text), but
    those of the folder's own ``index/`` (a clean build made elsewhere reads it)."""
    db = sqlite3.connect(f"file:{index / 'catalog.sqlite3'}?mode=ro", uri=True)
    mine = "path NOT LIKE 'index/%'"
    try:
        files = db.execute(
            f"SELECT path, checksum, status FROM files WHERE {mine} ORDER BY path"
        ).fetchall()
        chunks = db.execute(
            "SELECT f.path, c.chunk_index, c.text FROM chunks c JOIN files f ON f.id = c.file_id"
            f" WHERE {mine} ORDER BY f.path, c.chunk_index"
        ).fetchall()
    finally:
        db.close()
    return files, chunks


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, required=True, help="where the folders are made")
    p.add_argument("--notes", type=int, default=200, help="notes per folder (default 200)")
    p.add_argument("--edits", type=int, default=4, help="edits each way (default 4)")
    p.add_argument("--kills", type=int, default=20, help="service kills (default 20)")
    p.add_argument("--searches", type=int, default=200, help="searches each way (default 200)")
    p.add_argument("--poll", type=float, default=POLL_S, help="seconds between searches")
    p.add_argument("--seed", type=int, default=36)
    p.add_argument("--only", choices=["edits", "kills", "searches"], help="one measure only")
    args = p.parse_args(argv)
    folders = [args.work / f"folder{i}" for i in range(2)]
    for data in folders:
        make_folder(data, args.notes)
    runtime = os.environ.get("MICRO_RAG_RUNTIME_DIR") or tempfile.mkdtemp(prefix="mrb-")
    env = {**os.environ, "MICRO_RAG_RUNTIME_DIR": runtime, "MICRO_RAG_SERVICE_GRACE": "2"}
    env.pop("MICRO_RAG_STANDALONE", None)
    rows: list[Row] = []
    if args.only in (None, "edits"):
        for name, flags in (("through the service", ()), ("standalone", ("--standalone",))):
            took = edits(folders[0], env, args.edits, args.poll, *flags)
            rows.append(
                Row(
                    "many clients",
                    f"an edit searchable in each of {SESSIONS} sessions, {name}",
                    f"median {sorted(took)[len(took) // 2]:.2f} s, max {max(took):.2f} s",
                    "<= 2 s",
                    f"{args.edits} edits x {SESSIONS} sessions, polled every {args.poll} s",
                )
            )
            time.sleep(3)  # the grace: the service leaves
    if args.only in (None, "kills"):
        k = kills(folders, env, args.kills, args.seed)
        rows.append(
            Row(
                "many clients",
                f"kill -9 of the service, {SESSIONS} sessions on each of {k['folders']} folders",
                f"{k['recovered']} of {k['rounds']} recovered; "
                f"{k['converged']} of {k['folders']} indexes as a clean build",
                "all",
                f"searches during the rounds: {k['during']}, other errors {k['other']}; "
                f"send-again errors on a next request {k['gone']}; failures {k['failures']}",
            )
        )
    if args.only in (None, "searches"):
        rows.append(search_row(folders[1], env, args.searches))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
