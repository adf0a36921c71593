"""A first start of a mixed folder: when every cheap file is searchable, and when all are.

    PYTHONPATH=src .venv/bin/python bench/first_start.py /path/to/scifact/corpus.jsonl \
        /path/to/realdocs/docx

Builds a folder of twenty Markdown notes (the first documents of a ``corpus.jsonl``), the
small Word files of a folder, and two scans (pages of text rendered as PNG, read by the
real OCR) in ``archive/``, which sorts first. Then reads it once with the real reader
process (``sync_files``; keyword search sees each file as it commits) and prints, for
each file, the seconds until it was stored, and the two times that matter: until every
file other than the scans is stored, and until the whole folder is. Run it with another
checkout's ``src`` on ``PYTHONPATH`` for the before.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NOTES = 20
WORD_MAX_BYTES = 60_000
SCANS = 2


def build(folder: Path, corpus: Path, word_files: Path) -> None:
    docs = []
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            docs.append(json.loads(line))
            if len(docs) == NOTES + SCANS:
                break
    for i, doc in enumerate(docs[:NOTES]):
        note = folder / "notes" / f"note{i:02d}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"# {doc['title']}\n\n{doc['text']}\n", encoding="utf-8")
    for docx in sorted(word_files.glob("*.docx")):
        if docx.stat().st_size <= WORD_MAX_BYTES:
            (folder / "reports").mkdir(exist_ok=True)
            shutil.copy(docx, folder / "reports" / docx.name)
    for i, doc in enumerate(docs[NOTES:]):
        _scan(folder / "archive" / f"scan{i}.png", f"{doc['title']}\n\n{doc['text']}")


def _scan(path: Path, text: str) -> None:
    """A letter page at 150 dpi with ``text`` in black on white, as a scanner makes it."""
    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("L", (1275, 1650), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.truetype("DejaVuSans.ttf", 26)
    y = 100
    for para in text.split("\n"):
        for line in textwrap.wrap(para, 70) or [""]:
            draw.text((100, y), line, fill=0, font=font)
            y += 36
            if y > 1550:
                break
    path.parent.mkdir(parents=True, exist_ok=True)
    page.save(path)


def measure(folder: Path) -> dict[str, float]:
    """Seconds from the pass's start until each file was stored."""
    from micro_rag_mcp.core.results import Progress
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.local.catalog import Catalog
    from micro_rag_mcp.local.passes.indexer import sync_files

    index = folder / "index"
    index.mkdir()
    settings = Settings(data_folder=folder, index_folder=index, watch="off")
    stored: dict[str, float] = {}
    catalog = Catalog.open(index / "catalog.sqlite3")
    started = time.monotonic()

    def progress(p: Progress) -> None:
        if p.item and p.item not in stored:
            stored[p.item] = time.monotonic() - started

    try:
        sync_files(catalog, settings, progress=progress)
    finally:
        catalog.close()
    return stored


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", type=Path, help="a corpus.jsonl (title and text per line)")
    ap.add_argument("word_files", type=Path, help="a folder of .docx files")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build(folder, args.corpus, args.word_files)
        stored = measure(folder)
    for rel, at in sorted(stored.items(), key=lambda item: item[1]):
        print(f"{at:8.2f} s  {rel}")
    cheap = [at for rel, at in stored.items() if not rel.startswith("archive/")]
    print(f"files: {len(stored)}, of them cheap: {len(cheap)}")
    print(f"every cheap file stored after {max(cheap):.1f} s")
    print(f"the whole folder stored after {max(stored.values()):.1f} s")


if __name__ == "__main__":
    main()
