"""Speed and scale, side by side in one run: one table, with the targets beside the numbers.

    .venv/bin/python -m bench.perf --realdocs ../shared/eval/realdocs \
        --sec10q ../shared/eval/sec10q_dev

Each section is a module ``bench.perf_<name>`` with ``add_arguments(parser)`` and
``run(args) -> list[Row]``; ``--sections`` picks some (default: all). Synthetic data is
labelled so in the table. Targets are printed, never asserted: timings are noisy.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
from pathlib import Path
from types import ModuleType

from bench import work_folder
from bench.perf_common import Row, print_table

SECTIONS = ("indexing", "search", "memory", "milvus")


def _section(name: str) -> ModuleType:
    return importlib.import_module(f"bench.perf_{name}")


def main(argv: list[str] | None = None) -> int:
    # --help is added once the chosen sections have added their flags, so it lists them.
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0], add_help=False)
    p.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"comma-separated, of: {', '.join(SECTIONS)} (default: all)",
    )
    p.add_argument("--work", type=Path, default=work_folder("perf"), help="scratch folder (reused)")
    p.add_argument("--realdocs", type=Path, help="a folder of real documents")
    p.add_argument("--sec10q", type=Path, help="the sec10q_dev folder (its PDFs)")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    # Only the chosen sections are imported (and add their flags): each is a module of its own.
    known, _ = p.parse_known_args(argv)
    chosen = [s.strip() for s in known.sections.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        p.error(f"unknown section {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    modules = {name: _section(name) for name in chosen}
    for module in modules.values():
        module.add_arguments(p)
    p.add_argument("-h", "--help", action="help", help="show this help message and exit")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    print(
        f"# bench.perf: {platform.machine()}, {len(os.sched_getaffinity(0))} cores, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}",
        file=sys.stderr,
    )
    rows: list[Row] = []
    for name in chosen:
        started = time.perf_counter()
        rows.extend(modules[name].run(args))
        print(f"# {name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
