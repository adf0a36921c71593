"""Stop a server at random instants of its first index and print how long each stop took.

    .venv/bin/python scripts/shutdown_times.py --instants 20 --how stdin --seed 1

Each instant: a fresh folder of 300 chunks, the real server and model over stdio, then
stdin closed (or SIGTERM, or SIGINT to the process group) after a random delay within
the time a whole first index takes. Prints each stop's time, exit status and the phase
it interrupted, then the minimum, median and maximum.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_shutdown import Server, write_corpus  # noqa: E402

HOW = {"stdin": "stdin closed", "term": "SIGTERM", "int": "SIGINT"}


def first_index_seconds(root: Path) -> float:
    """How long a whole first index takes here, now: the range of the random instants."""
    data = root / "calibrate"
    write_corpus(data)
    started = time.monotonic()
    server = Server(data)
    server.wait_for_log("start-up index:", timeout=900)
    elapsed = time.monotonic() - started
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    server.finish()
    return elapsed


def stop(server: Server, how: str) -> None:
    if how == "stdin":
        assert server.proc.stdin is not None
        server.proc.stdin.close()
    elif how == "term":
        server.proc.send_signal(signal.SIGTERM)
    else:
        os.killpg(server.proc.pid, signal.SIGINT)


def phase(log: str) -> str:
    for needle, name in (
        ("start-up index:", "done"),
        ("embedding ", "embedding"),
        ("model ready", "reading"),
    ):
        if needle in log:
            return name
    return "starting"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instants", type=int, default=20)
    parser.add_argument("--how", choices=sorted(HOW), default="stdin")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    times: list[float] = []
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        span = first_index_seconds(Path(tmp))
        print(f"a first index takes {span:.1f} s; stopping with {HOW[args.how]}")
        for i in range(args.instants):
            data = Path(tmp) / f"docs{i}"
            write_corpus(data)
            server = Server(data)
            time.sleep(rng.uniform(0.0, span))
            seen = phase("".join(server.lines))
            asked = time.monotonic()
            stop(server, args.how)
            code, log = server.finish(timeout=300)
            took = time.monotonic() - asked
            aborted = "terminate called" in log or "Traceback" in log
            bad += code != 0 or aborted
            times.append(took)
            print(
                f"{i:3d}  {took:6.2f} s  exit {code}  during {seen}"
                + ("  ABORT" if aborted else "")
            )
    print(
        f"stop time: min {min(times):.2f} s, median {statistics.median(times):.2f} s, "
        f"max {max(times):.2f} s; {bad} bad exits"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
