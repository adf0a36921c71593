"""Kill a reindex with SIGKILL at many random instants and print the tally.

    .venv/bin/python scripts/crash_kill.py --instants 200 --seed 1

Each instant: change files, start a reindex in a child process, keep changing files,
SIGKILL the child at a random moment, then check that the index opens, that every
file's chunks are one whole version of it, that search returns nothing the catalog no
longer holds, and that the next reindex equals a clean build.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.crashkit import run_kills  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instants", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        killed, failures, reasons = run_kills(Path(tmp) / "docs", args.instants, args.seed)
    print(f"instants:                 {args.instants}")
    print(f"killed before finishing:  {killed}")
    print(f"finished before the kill: {args.instants - killed}")
    print(f"failed checks:            {failures}")
    for reason in reasons:
        print(f"  {reason}")
    print(f"elapsed:                  {time.monotonic() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
