"""Many launches, as several agent sessions make them: through the service, and standalone.

``SESSIONS`` launches on each of ``FOLDERS`` folders of ``--notes`` notes, the real
``micro-rag-mcp`` over stdio as a client starts it, first through the service, then with
``--standalone``, side by side in one run. Measured:

- memory (RSS and PSS, summed over every process of the mode: the launches, and the
  service) once every session is idle, and after each has searched;
- one relay's RSS;
- launch to first answer (``initialize``): the first launch (service cold), a later one
  (service warm) and a bare ``MCPServer``, taking turns;
- search p50/p99 through a relay against a standalone server, taking turns;
- ``reindex(force: true)`` from two sessions of one folder at once: both answer, one
  pass (one of the two answers says it joined the other's).

    .venv/bin/python -m bench.many_clients --work <work>/many --notes 2000

The folders are made (and indexed once, standalone) if they do not exist.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.handshake import BARE, INITIALIZE
from bench.perf_common import Row, percentiles_ms, print_table

SESSIONS = 5
FOLDERS = 3
TOPICS = ["volcano", "glacier", "desert", "rainforest", "coral", "tundra", "savanna", "canyon"]


def make_folder(data: Path, notes: int) -> None:
    if data.is_dir():
        return
    data.mkdir(parents=True)
    for i in range(notes):
        topic = TOPICS[i % len(TOPICS)]
        body = "\n\n".join(
            f"Note {i} on the {topic}, part {p}: the {topic} in season {p}, its climate "
            f"and its animals, as field team {i % 17} saw them."
            for p in range(3)
        )
        (data / f"note{i:05d}.md").write_text(f"# {topic.title()} {i}\n\n{body}\n")
    subprocess.run(
        [sys.executable, "-m", "micro_rag_mcp.cli.app", "index", str(data)],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "MICRO_RAG_STANDALONE": "1"},
    )


class Launch:
    """One ``micro-rag-mcp`` process spoken to over raw stdio lines."""

    def __init__(self, data: Path, env: dict[str, str], *flags: str) -> None:
        command = [sys.executable, "-m", "micro_rag_mcp", "--data-folder", str(data)]
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [*command, "--title", data.name, "--inst", "Search.", "--model", "minilm", *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._next = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self._next:
                return answer

    def initialize(self) -> float:
        """Seconds from the process's start to the answer of ``initialize``."""
        self.call("initialize", INITIALIZE["params"])  # type: ignore[arg-type]
        elapsed = time.perf_counter() - self.started
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()
        return elapsed

    def search(self, query: str) -> dict[str, Any]:
        return self.tool("search", {"query": query})

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = self.call("tools/call", {"name": name, "arguments": arguments})
        out: dict[str, Any] = answer["result"]["structuredContent"]  # content is prose
        return out

    def wait_idle(self, timeout: float = 600.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            index = self.search("ping")["index"]
            if index["model"] == "ready" and not index["indexing"]:
                return
            assert time.monotonic() < deadline, f"never idle: {index}"
            time.sleep(0.2)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def memory_kb(pid: int) -> tuple[int, int]:
    """RSS and PSS of ``pid``, in kB."""
    rss = pss = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("Pss:"):
            pss = int(line.split()[1])
    return rss, pss


def service_pids(runtime: Path) -> list[int]:
    return [int(p.read_text()) for p in runtime.glob("*/service.pid")]


def total_mb(pids: list[int]) -> tuple[float, float]:
    rss = pss = 0
    for pid in pids:
        r, p = memory_kb(pid)
        rss, pss = rss + r, pss + p
    return rss / 1024, pss / 1024


def fleet(folders: list[Path], env: dict[str, str], *flags: str) -> dict[str, Any]:
    """Every launch of one mode: memory idle and after a search each, and the relay's RSS."""
    launches = []
    for _ in range(SESSIONS):
        for data in folders:
            launch = Launch(data, env, *flags)
            launch.initialize()
            launches.append(launch)
    for launch in launches:
        launch.wait_idle()
    runtime = Path(env["MICRO_RAG_RUNTIME_DIR"])
    pids = [launch.proc.pid for launch in launches] + service_pids(runtime)
    idle = total_mb(pids)
    for launch in launches:
        assert launch.search("glacier climate")["results"]
    searched = total_mb(pids)
    one = memory_kb(launches[0].proc.pid)[0] / 1024
    for launch in launches:
        launch.close()
    return {"idle": idle, "searched": searched, "launch_rss": one}


def bare_s() -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", BARE], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
    proc.stdin.flush()
    proc.stdout.readline()
    elapsed = time.perf_counter() - started
    proc.kill()
    proc.wait()
    return elapsed


def handshakes(data: Path, env: dict[str, str], rounds: int) -> dict[str, list[float]]:
    """Cold (a new service each time), warm (a service serving a session) and bare."""
    cold, warm, bare = [], [], []
    for _ in range(rounds):
        fresh = {**env, "MICRO_RAG_RUNTIME_DIR": tempfile.mkdtemp(prefix="mrb-")}
        first = Launch(data, fresh)
        cold.append(first.initialize())
        bare.append(bare_s())
        later = Launch(data, fresh)
        warm.append(later.initialize())
        later.close()
        first.close()
    return {"cold": cold, "warm": warm, "bare": bare}


def search_row(folder: Path, env: dict[str, str], count: int) -> Row:
    """Search p50 / p99 through a relay against a standalone server (``searches``)."""
    times = searches(folder, env, count)
    r50, r99 = percentiles_ms(times["relay"])
    s50, s99 = percentiles_ms(times["standalone"])
    return Row(
        "many clients",
        "search through a relay, p50 / p99",
        f"{r50:.1f} / {r99:.1f} ms",
        "p50 <= standalone + 2 ms",
        f"standalone {s50:.1f} / {s99:.1f} ms, {count} each, taking turns",
    )


def searches(data: Path, env: dict[str, str], n: int) -> dict[str, list[float]]:
    relay, alone = Launch(data, env), Launch(data, env, "--standalone")
    times: dict[str, list[float]] = {"relay": [], "standalone": []}
    for launch in (relay, alone):
        launch.initialize()
        launch.wait_idle()
    for i in range(n):
        for name, launch in (("relay", relay), ("standalone", alone)):
            started = time.perf_counter()
            launch.search(f"{TOPICS[i % len(TOPICS)]} season {i % 3}")
            times[name].append(time.perf_counter() - started)
    relay.close()
    alone.close()
    return times


def two_reindexes(data: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    import threading

    a, b = Launch(data, env), Launch(data, env)
    for launch in (a, b):
        launch.initialize()
        launch.wait_idle()
    answers: list[dict[str, Any]] = []
    threads = [
        threading.Thread(target=lambda x=x: answers.append(x.tool("reindex", {"force": True})))
        for x in (a, b)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    a.close()
    b.close()
    return answers


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, required=True, help="where the folders are made")
    p.add_argument("--notes", type=int, default=2000, help="notes per folder (default 2000)")
    p.add_argument("--rounds", type=int, default=5, help="handshake rounds (default 5)")
    p.add_argument("--searches", type=int, default=200, help="searches each way (default 200)")
    args = p.parse_args(argv)
    folders = [args.work / f"folder{i}" for i in range(FOLDERS)]
    for data in folders:
        make_folder(data, args.notes)
    runtime = tempfile.mkdtemp(prefix="mrb-")
    env = {**os.environ, "MICRO_RAG_RUNTIME_DIR": runtime, "MICRO_RAG_SERVICE_GRACE": "2"}
    env.pop("MICRO_RAG_STANDALONE", None)
    rows: list[Row] = []
    n = SESSIONS * FOLDERS
    shared = fleet(folders, env)
    time.sleep(3)  # the grace: the service leaves before the standalone fleet
    alone = fleet(folders, env, "--standalone")
    for when in ("idle", "searched"):
        (srss, spss), (arss, apss) = shared[when], alone[when]
        rows.append(
            Row(
                "many clients",
                f"{n} launches on {FOLDERS} folders of {args.notes} notes, {when}: PSS",
                f"{spss:,.0f} MB",
                "<= 1 GB",
                f"standalone {apss:,.0f} MB; RSS {srss:,.0f} MB against {arss:,.0f} MB",
            )
        )
    rows.append(
        Row("many clients", "one relay's RSS", f"{shared['launch_rss']:.1f} MB", "<= 30 MB")
    )
    hs = handshakes(folders[0], env, args.rounds)
    bare = statistics.median(hs["bare"])
    for kind, target in (("cold", "<= 1.5x"), ("warm", "<= 1.10x")):
        mine = statistics.median(hs[kind])
        note = f"median of {args.rounds}: {mine:.2f} s against a bare server's {bare:.2f} s"
        rows.append(
            Row("many clients", f"launch to handshake, {kind}", f"{mine / bare:.2f}x", target, note)
        )
    rows.append(search_row(folders[0], env, args.searches))
    answers = two_reindexes(folders[1], env)
    joined = sum(1 for a in answers if a.get("joined"))
    ended = sum(1 for a in answers if not a.get("running") and "files_updated" in a)
    rows.append(
        Row(
            "many clients",
            "reindex(force) from two sessions at once",
            f"{ended} of 2 answered, {joined} joined",
            "both answer, one pass",
        )
    )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
