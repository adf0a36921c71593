"""The PowerPoint reader against the python-pptx one it replaced: same text, CPU seconds.

    PYTHONPATH=src .venv/bin/python -m bench.pptx_reader FOLDER_OR_DECK ... [--rounds 5]

Each argument is a group of decks (a folder's ``*.pptx``, or one deck); ``--made`` adds
the decks ``made_decks`` writes with python-pptx (the tests' and one of odd shapes),
``--slides N`` a deck of N slides made as ``bench.readers`` makes its own. For every deck: whether
both readers give the same document (text, sections, locators, breaks; titles apart,
since python-pptx titles a deck without core properties "PowerPoint Presentation"); then
per group the CPU seconds of reading all its decks, the best of ``--rounds``, the two
readers alternating; and the CPU seconds of ``import pptx`` in a fresh process, which a
reader process paid at its first deck. Needs the test extra (python-pptx).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import re
import subprocess
import sys
import tempfile
import time
import zipfile
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
from tests.formatfactory import Slide, make_pptx  # noqa: E402

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


def made_decks(folder: Path) -> list[Path]:
    """The tests' decks, one with no core properties, one of odd shapes, one of 200 slides."""
    folder.mkdir(parents=True, exist_ok=True)
    decks = [
        make_pptx(
            folder / "deck.pptx",
            [
                Slide("Roadmap", body=["Ship the reader", "Then the index"], notes="Say it"),
                Slide("Numbers", grouped=["grouped box one", "grouped box two"]),
                Slide("", table=[["Quarter", "Sales"], ["Q3", "12"]], extra=["loose box"]),
            ],
        ),
        make_pptx(folder / "offices.pptx", [Slide("\n".join(f"Code {i}" for i in range(30)))]),
        make_pptx(folder / "mixed.pptx", [Slide("Plan", body=["Ship"]), Slide(body=["x " * 9])]),
        make_pptx(folder / "long.pptx", [Slide("Review of " + "very " * 40, body=["Grew"])]),
    ]
    bare = folder / "bare.pptx"
    with zipfile.ZipFile(decks[0]) as source, zipfile.ZipFile(bare, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "_rels/.rels":
                data = re.sub(rb"<Relationship [^>]*core-properties\"[^>]*/>", b"", data)
            if info.filename != "docProps/core.xml":
                target.writestr(info.filename, data)
    return [*decks, bare, odd_deck(folder / "odd.pptx"), big_deck(folder / "big.pptx", 200)]


def odd_deck(path: Path) -> Path:
    """Line breaks, escapes, nested groups, an autoshape, a connector, a picture, merged
    cells, notes of two paragraphs, and the last slide moved first."""
    from PIL import Image
    from pptx import Presentation
    from pptx.enum.shapes import MSO_CONNECTOR, MSO_SHAPE
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Breaks\vand tabs\tinside"
    frame = slide.placeholders[1].text_frame
    frame.text = "line one\vline two"
    paragraph = frame.add_paragraph()
    paragraph.text = "  spaced  "
    paragraph.add_run().text = " & <escaped> "
    group = slide.shapes.add_group_shape()
    inner = group.shapes.add_group_shape()
    inner.shapes.add_textbox(Inches(1), Inches(1), Inches(1), Inches(1)).text = "nested deep"
    box = group.shapes.add_shape(MSO_SHAPE.ROUNDED_RECTANGLE, 0, 0, Inches(1), Inches(1))
    box.text = "autoshape in a group"
    slide.shapes.add_connector(MSO_CONNECTOR.STRAIGHT, 0, 0, Inches(1), Inches(1))
    image = io.BytesIO()
    Image.new("RGB", (4, 4)).save(image, "PNG")
    slide.shapes.add_picture(io.BytesIO(image.getvalue()), Inches(1), Inches(1))
    slide.notes_slide.notes_text_frame.text = "note one\nnote two"
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Merged"
    table = second.shapes.add_table(3, 3, Inches(1), Inches(1), Inches(4), Inches(2)).table
    table.cell(0, 0).merge(table.cell(0, 1))
    table.cell(0, 0).text = "wide head"
    table.cell(2, 0).text = " pad "
    deck.slides.add_slide(deck.slide_layouts[6]).shapes.add_shape(MSO_SHAPE.OVAL, 0, 0, 9, 9)
    last = deck.slides.add_slide(deck.slide_layouts[0])
    last.shapes.title.text = "Made last, moved first"
    slide_ids = deck.part._element.sldIdLst  # python-pptx has no call to move a slide
    slide_ids.insert(0, slide_ids[-1])
    deck.save(str(path))
    return path


def big_deck(path: Path, slides: int) -> Path:
    return make_pptx(
        path,
        [
            Slide(f"Slide {i}", body=[f"point {i}.{j} of the plan" for j in range(8)], notes="n")
            for i in range(slides)
        ],
    )


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
    parser.add_argument("--made", action="store_true", help="add the decks of made_decks")
    parser.add_argument("--slides", type=int, default=0, help="add a made deck of N slides")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        groups = {str(p): sorted(p.glob("*.pptx")) if p.is_dir() else [p] for p in args.decks}
        if args.made:
            groups["decks made with python-pptx"] = made_decks(Path(tmp) / "made")
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
