"""How many chunks a local edit embeds again: vectors are keyed by their text.

Reads one document with the real reader, chunks it as the index does, then applies one
local edit at a time at random places in its middle (a paragraph made longer, made
shorter, a paragraph inserted, one deleted), chunks it again, and counts the chunks whose
text (so whose vector key) is new: those are what a reindex embeds again.

    .venv/bin/python -m bench.edit_stability ../shared/eval/realdocs/docx/handbook-872p.docx
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
from collections.abc import Callable
from pathlib import Path

from micro_rag_mcp.core.settings import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from micro_rag_mcp.ingest.readers import read_document
from micro_rag_mcp.text.chunking import chunk_text
from micro_rag_mcp.text.vector_text import vector_key

Edit = Callable[[str, int, int, random.Random], str]


def _longer(text: str, start: int, end: int, rng: random.Random) -> str:
    return text[:end] + " This sentence was added by an edit." + text[end:]


def _shorter(text: str, start: int, end: int, rng: random.Random) -> str:
    cut = max(start + 1, end - max(10, (end - start) // 3))
    return text[:cut] + text[end:]


def _inserted(text: str, start: int, end: int, rng: random.Random) -> str:
    new = "A new paragraph written during the edit, about the budget of the next year."
    return text[:end] + "\n\n" + new + text[end:]


def _deleted(text: str, start: int, end: int, rng: random.Random) -> str:
    return text[:start] + text[end:].lstrip("\n")


EDITS: dict[str, Edit] = {
    "paragraph made longer": _longer,
    "paragraph made shorter": _shorter,
    "paragraph inserted": _inserted,
    "paragraph deleted": _deleted,
}


def keys(text: str, size: int, overlap: int) -> list[int]:
    return [vector_key("", c.text) for c in chunk_text(text, size, overlap)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("document", type=Path)
    p.add_argument("--tries", type=int, default=20, help="edits of each kind")
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE)
    p.add_argument("--chunk-overlap", type=int, default=DEFAULT_CHUNK_OVERLAP)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    text = read_document(args.document, max_bytes=1 << 30).text
    before = keys(text, args.chunk_size, args.chunk_overlap)
    paragraphs = [
        m.span() for m in re.finditer(r"[^\n]+", text) if len(m.group()) > 40
    ]  # lines with some text: a DOCX paragraph is one line of the extracted text
    middle = paragraphs[len(paragraphs) // 4 : 3 * len(paragraphs) // 4]
    rng = random.Random(args.seed)
    print(f"{args.document.name}: {len(text):,} characters, {len(before):,} chunks")
    print("| edit | chunks embedded again: median | max | of |")
    print("| --- | ---: | ---: | ---: |")
    old = set(before)
    for name, edit in EDITS.items():
        counts = []
        for _ in range(args.tries):
            start, end = rng.choice(middle)
            after = keys(edit(text, start, end, rng), args.chunk_size, args.chunk_overlap)
            counts.append(sum(1 for k in after if k not in old))
        print(f"| {name} | {statistics.median(counts):g} | {max(counts)} | {len(before):,} |")


if __name__ == "__main__":
    main()
