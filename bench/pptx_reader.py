"""The PowerPoint reader against the python-pptx one it replaced: same text, CPU seconds.

    PYTHONPATH=src .venv/bin/python -m bench.pptx_reader FOLDER_OR_DECK ... [--rounds 5]

Each argument is a group of decks (a folder's ``*.pptx``, or one deck); ``--slides N``
adds a deck of N slides made as ``bench.readers`` makes its own. For every deck: whether
both readers give the same document (text, sections, locators, breaks; titles apart,
since python-pptx titles a deck without core properties "PowerPoint Presentation"); then
per group the CPU seconds of reading all its decks, the best of ``--rounds``, the two
readers alternating; and the CPU seconds of ``import pptx`` in a fresh process, which a
reader process paid at its first deck. Needs the test extra (python-pptx).
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.readers import pptx as make_deck  # noqa: E402
from micro_rag_mcp.ingest.readers.document import (  # noqa: E402
    Document,
    DocumentBuilder,
    clean_title,
    first_line_heading,
)
from micro_rag_mcp.ingest.readers.guards import vet_zip  # noqa: E402
from micro_rag_mcp.ingest.readers.powerpoint import MAX_GROUP_DEPTH, read_pptx  # noqa: E402

Reader = Callable[[Path], Document]


def read_with_python_pptx(path: Path) -> Document:
    """The reader as it was on python-pptx (0.2.0), without its time budget."""
    vet_zip(path, "PPTX", "ppt/presentation.xml")
    import pptx

    deck = pptx.Presentation(str(path))
    builder = DocumentBuilder()
    for number, slide in enumerate(deck.slides, 1):
        title_shape = slide.shapes.title
        title_text = title_shape.text_frame.text if title_shape is not None else ""
        builder.locator(f"slide {number}", hard=True)
        builder.section(first_line_heading(title_text))
        builder.add(title_text)
        skip = title_shape.shape_id if title_shape is not None else None
        for text in _shape_texts(slide.shapes, skip):
            builder.add(text)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                builder.add(f"Notes: {notes.text}")
    return builder.build(clean_title(deck.core_properties.title))


def _shape_texts(shapes: Any, skip: int | None) -> Iterator[str]:
    stack: list[tuple[Any, int]] = [(shape, 0) for shape in reversed(list(shapes))]
    while stack:
        shape, depth = stack.pop()
        if shape.shape_id == skip:
            continue
        if hasattr(shape, "shapes"):
            if depth < MAX_GROUP_DEPTH:
                stack.extend((child, depth + 1) for child in reversed(list(shape.shapes)))
        elif getattr(shape, "has_table", False) and shape.has_table:
            rows = (" | ".join(cell.text.strip() for cell in row.cells) for row in shape.table.rows)
            yield "\n".join(row for row in rows if row.strip(" |"))
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            yield shape.text_frame.text


def differences(old: Document, new: Document) -> list[str]:
    """The fields of two documents that differ, the title left out."""
    return [
        field.name
        for field in dataclasses.fields(old)
        if field.name != "title" and getattr(old, field.name) != getattr(new, field.name)
    ]


def cpu_seconds(reader: Reader, decks: list[Path]) -> float:
    started = time.process_time()
    for deck in decks:
        reader(deck)
    return time.process_time() - started


def import_seconds() -> float:
    code = "import time; t = time.process_time(); import pptx; print(time.process_time() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("decks", nargs="*", type=Path, help="folders of decks, or decks")
    parser.add_argument("--slides", type=int, default=0, help="add a made deck of N slides")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        groups = {str(p): sorted(p.glob("*.pptx")) if p.is_dir() else [p] for p in args.decks}
        if args.slides:
            groups[f"a made deck of {args.slides} slides"] = [make_deck(Path(tmp), args.slides)]
        same = total = 0
        for decks in groups.values():
            for deck in decks:
                total += 1
                diff = differences(read_with_python_pptx(deck), read_pptx(deck))
                same += not diff
                if diff:
                    print(f"{deck}: differs in {', '.join(diff)}")
        print(f"the same document from both readers: {same} of {total} decks\n")
        print("| decks | python-pptx CPU s | lxml CPU s | ratio |")
        print("| --- | ---: | ---: | ---: |")
        for name, decks in groups.items():
            old, new = float("inf"), float("inf")
            for _ in range(args.rounds):
                old = min(old, cpu_seconds(read_with_python_pptx, decks))
                new = min(new, cpu_seconds(read_pptx, decks))
            print(f"| {name} ({len(decks)}) | {old:.3f} | {new:.3f} | {old / new:.1f}× |")
    print(f"\n`import pptx` in a fresh process: {import_seconds():.3f} CPU s")


if __name__ == "__main__":
    main()
