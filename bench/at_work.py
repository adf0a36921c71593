"""The index at work: searches, changes and interruptions while a long pass runs.

The real server (``python -m micro_rag_mcp``) over stdio through the MCP SDK's client, on
generated incident notes (``bench.incident_notes``: four subfolders, 100 notes with an
identifier of their own) and, if given, a copy of a folder of real documents:

- ``first``: a first index. Files created and deleted meanwhile (``--changes`` of each)
  are timed to the search that reflects them; a ``reindex`` call is timed to its answer
  (or to the client's timeout, 120 s); the identifier queries are searched when the
  share of chunks with a vector first reaches 10 %, 50 % and 90 %, and at 100 %.
- ``forced``: ``reindex(force: true)`` on the complete index: the lowest share of chunks
  with a vector and the identifier top-1 rate while it runs, the chunks it embedded,
  files created and deleted meanwhile.
- ``move``: a subfolder renamed (``os.rename``): the same share and rate, the chunks left
  without a vector at most, the time until its probe file is found at its new path.
- ``interrupted``: ``--tries`` forced passes stopped a random 1-20 s in, by SIGKILL of the
  server's process group or by the client going away (closing the pipe), in turn; then
  ``micro-rag status`` counts the chunks whose vector is in the saved index, reading the
  files only (no model, nothing embedded, nothing written).

Every section but ``first`` starts from a copy of the complete index and its folder,
made after the first index and kept in the work folder for later runs.

    .venv/bin/python -m bench.at_work --notes 400 --realdocs ../shared/eval/realdocs
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import anyio

from bench import work_folder
from bench.at_work_corpus import Corpus, ensure_snapshot, notes_corpus, realdocs_corpus
from bench.at_work_sections import SECTION_RUNS
from bench.at_work_session import install_signal_handlers, kill_servers
from bench.perf_common import Row, print_table

logger = logging.getLogger("bench")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.at_work", description=__doc__.split("\n")[0])
    p.add_argument("--notes", type=int, default=4000, help="incident notes (0: none)")
    p.add_argument("--realdocs", type=Path, help="a folder of documents (copied; never written)")
    p.add_argument("--work", type=Path, default=work_folder("at-work"), help="work folder")
    p.add_argument("--tries", type=int, default=10, help="interrupted forced passes")
    p.add_argument("--changes", type=int, default=10, help="files created (and deleted) per pass")
    p.add_argument("--deadline", type=float, default=60.0, help="seconds a change may take")
    p.add_argument("--sections", default=",".join(SECTION_RUNS), help="a subset, comma-separated")
    p.add_argument("--interrupt", choices=("both", "kill", "close"), default="both")
    p.add_argument("--model-precision", choices=("fp32", "int8"), default="fp32")
    p.add_argument("--seed", type=int, default=19, help="the interruption instants")
    args = p.parse_args(argv)
    args.sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(args.sections) - set(SECTION_RUNS))
    if unknown:
        p.error(f"--sections: unknown {', '.join(unknown)}; from {', '.join(SECTION_RUNS)}")
    return args


async def run(corpora: Sequence[Corpus], args: argparse.Namespace) -> list[Row]:
    rows: list[Row] = []
    for c in corpora:
        for section in args.sections:
            if section != "first":
                await ensure_snapshot(c)
            started = time.monotonic()
            logger.info("%s: %s", c.name, section)
            got = await SECTION_RUNS[section](c, args)
            for row in got:
                logger.info("| %s | %s | %s | %s | %s |", *vars(row).values())
            logger.info("%s: %s took %.0f s", c.name, section, time.monotonic() - started)
            rows += got
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
    install_signal_handlers()
    args.work.mkdir(parents=True, exist_ok=True)
    corpora = []
    if args.notes:
        corpora.append(notes_corpus(args.work, args.notes, args.changes, args.model_precision))
    if args.realdocs:
        corpora.append(
            realdocs_corpus(args.work, args.realdocs, args.changes, args.model_precision)
        )
    load, started = os.getloadavg(), time.monotonic()
    try:
        rows = anyio.run(run, corpora, args)
    except KeyboardInterrupt:
        print("at work: stopped; every server it started is stopped too", file=sys.stderr)
        return 130
    finally:
        kill_servers()
    print(
        f"\nat work: {' '.join(sys.argv[1:])}; {time.monotonic() - started:.0f} s; load average "
        f"{load[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end; {os.cpu_count()} cores\n"
    )
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
