"""Runs of encoded bytes cut from text (``ingest/readers/encoded.py``) in a folder of
real files: how many files lose characters, how many, a sample of each cut, the time.

    .venv/bin/python bench/encoded_runs.py FOLDER [--samples 20]

Reads every text-like file under FOLDER as UTF-8 (others are skipped) and runs
``encoded_runs`` on its text; what is cut should be encoded bytes only, never prose,
URLs, hashes, CJK text or identifiers.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from micro_rag_mcp.ingest.readers.encoded import encoded_runs  # noqa: E402

SUFFIXES = frozenset(
    (".py", ".pyi", ".md", ".txt", ".rst", ".json", ".html", ".js", ".css", ".yaml", ".toml")
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    files = chars = cut = touched = 0
    seconds = 0.0
    samples: list[str] = []
    for path in sorted(args.folder.rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        files, chars = files + 1, chars + len(text)
        start = time.perf_counter()
        runs = encoded_runs(text)
        seconds += time.perf_counter() - start
        touched += bool(runs)
        for begin, end in runs:
            cut += end - begin
            sample = text[begin : begin + 60].replace("\n", "⏎")
            samples.append(f"{path.relative_to(args.folder)}: {end - begin:,} chars {sample}")
    print(f"{files:,} files, {chars / 1e6:.1f} M characters read in {seconds:.2f} s")
    print(f"{touched:,} files with a cut, {cut:,} characters cut")
    for line in samples[: args.samples]:
        print(" ", line)


if __name__ == "__main__":
    main()
