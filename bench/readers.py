"""Reader throughput: make one file of each format with its real library, time the read.

    .venv/bin/python bench/readers.py [--scale 1.0]

Prints, per format, the file's size, the units it holds (pages, rows, slides, chapters,
cells) and how many of them are read per second (median of three reads, in this
process, without the reader child's start-up). Needs the test extras (reportlab).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from micro_rag_mcp.readers import read_document  # noqa: E402
from tests.docfactory import make_docx, make_pdf  # noqa: E402
from tests.formatfactory import (  # noqa: E402
    Slide,
    code_cell,
    make_epub,
    make_ipynb,
    make_pptx,
    make_xlsx,
    md_cell,
)

SENTENCE = "The field team logged {i} readings at the northern station before the storm. "


def para(i: int, n: int = 6) -> str:
    return "".join(SENTENCE.format(i=i * 10 + k) for k in range(n))


def html(folder: Path, n: int) -> Path:
    body = "".join(
        f"<h2>Section {i}</h2><p>{para(i)}</p><table><tr><td>a{i}</td><td>b{i}</td></tr></table>"
        for i in range(n)
    )
    path = folder / "page.html"
    path.write_text(f"<html><head><title>t</title></head><body><nav>menu</nav>{body}</body></html>")
    return path


def csv(folder: Path, n: int) -> Path:
    path = folder / "rows.csv"
    lines = ["Name,Team,Score,Note"] + [
        f"person {i},team {i % 7},{i},{para(i, 1)}" for i in range(n)
    ]
    path.write_text("\n".join(lines))
    return path


def xlsx(folder: Path, n: int) -> Path:
    rows = [["Name", "Team", "Score", "Note"]]
    rows += [[f"person {i}", f"team {i % 7}", i * 1.5, para(i, 1)] for i in range(n)]
    return make_xlsx(folder / "rows.xlsx", {"Data": rows})


def pptx(folder: Path, n: int) -> Path:
    slides = [
        Slide(f"Slide {i}", body=[para(i, 2), para(i + 1, 2)], notes=para(i, 1)) for i in range(n)
    ]
    return make_pptx(folder / "deck.pptx", slides)


def epub(folder: Path, n: int) -> Path:
    chapters = [
        (f"Chapter {i}", "".join(f"<p>{para(i * 50 + k)}</p>" for k in range(40))) for i in range(n)
    ]
    return make_epub(folder / "book.epub", chapters)


def ipynb(folder: Path, n: int) -> Path:
    cells = []
    for i in range(n // 2):
        cells.append(md_cell(f"## Step {i}\n\n{para(i, 2)}"))
        out = {"output_type": "stream", "name": "stdout", "text": [f"{i}\n"]}
        cells.append(code_cell(f"x = {i}\nprint(x)", [out]))
    return make_ipynb(folder / "nb.ipynb", cells)


def pdf(folder: Path, n: int) -> Path:
    return make_pdf(
        folder / "doc.pdf", ["\n".join(para(i * 5 + k, 1) for k in range(30)) for i in range(n)]
    )


def docx(folder: Path, n: int) -> Path:
    return make_docx(folder / "doc.docx", [para(i) for i in range(n)])


FORMATS: dict[str, tuple[Callable[[Path, int], Path], int, str]] = {
    "pdf": (pdf, 100, "pages"),
    "docx": (docx, 2000, "paragraphs"),
    "html": (html, 2000, "sections"),
    "csv": (csv, 50_000, "rows"),
    "xlsx": (xlsx, 20_000, "rows"),
    "pptx": (pptx, 200, "slides"),
    "epub": (epub, 30, "chapters"),
    "ipynb": (ipynb, 1000, "cells"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every file's size")
    args = parser.parse_args()
    print("| format | file | units | read (s) | units per second |")
    print("| --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, count, unit) in FORMATS.items():
            n = max(1, int(count * args.scale))
            path = make(Path(tmp), n)
            times = []
            for _ in range(3):
                started = time.perf_counter()
                read_document(path, max_bytes=10**9)
                times.append(time.perf_counter() - started)
            took = statistics.median(times)
            size = path.stat().st_size / 1024 / 1024
            print(f"| {name} | {size:.1f} MB | {n:,} {unit} | {took:.2f} | {n / took:,.0f} |")


if __name__ == "__main__":
    main()
