"""Reader throughput: make one file of each format with its real library, time the read.

    .venv/bin/python bench/readers.py [--scale 1.0] [--only ocr-pdf,png]

Prints, per format, the file's size, the units it holds (pages, rows, slides, chapters,
cells) and how many of them are read per second (median of three reads, in this
process, without the reader child's start-up; one read for OCR, whose units are the
pages it recognized, after a first read that loads the models, without OCR's time
budgets so that a busy machine does not cut pages short), and the CPU seconds of
all the process's threads, which depend less on what else the machine runs. Needs the test extras
(reportlab); the OCR rows need the ocr extra and are left out without it.
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

from micro_rag_mcp.ingest.readers import Document, read_document  # noqa: E402
from micro_rag_mcp.ingest.readers.images import read_image  # noqa: E402
from micro_rag_mcp.ingest.readers.ocr import ocr_installed  # noqa: E402
from micro_rag_mcp.ingest.readers.pdf import read_pdf  # noqa: E402
from tests.docfactory import make_docx, make_pdf, pdf_bytes  # noqa: E402
from tests.formatfactory import (  # noqa: E402
    Slide,
    code_cell,
    make_epub,
    make_ipynb,
    make_odf,
    make_pptx,
    make_scanned_pdf,
    make_xlsx,
    md_cell,
    ods_row,
    text_image,
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


def odt(folder: Path, n: int) -> Path:
    body = "".join(
        f'<text:h text:outline-level="2">Part {i}</text:h><text:p>{para(i)}</text:p>'
        for i in range(n // 2)
    )
    return make_odf(folder / "doc.odt", "text", body)


def ods(folder: Path, n: int) -> Path:
    rows = [ods_row("Name", "Team", "Score", "Note")]
    rows += [ods_row(f"person {i}", f"team {i % 7}", str(i), para(i, 1)) for i in range(n)]
    body = f'<table:table table:name="Data">{"".join(rows)}</table:table>'
    return make_odf(folder / "rows.ods", "spreadsheet", body)


def odp(folder: Path, n: int) -> Path:
    slides = "".join(
        f'<draw:page><draw:frame presentation:class="title"><draw:text-box><text:p>Slide {i}'
        f"</text:p></draw:text-box></draw:frame><draw:frame><draw:text-box><text:p>{para(i, 4)}"
        "</text:p></draw:text-box></draw:frame></draw:page>"
        for i in range(n)
    )
    return make_odf(folder / "deck.odp", "presentation", slides)


def eml(folder: Path, n: int) -> Path:
    """A message with a PDF of ``n`` pages attached: the units are the attachment's pages."""
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["Subject"], msg["From"], msg["To"] = "Readings", "field@example.org", "lab@example.org"
    msg.set_content(para(0, 20))
    pages = ["\n".join(para(i * 5 + k, 1) for k in range(30)) for i in range(n)]
    msg.add_attachment(pdf_bytes(pages), maintype="application", subtype="pdf", filename="r.pdf")
    path = folder / "message.eml"
    path.write_bytes(msg.as_bytes())
    return path


def scan_lines(i: int) -> list[str]:
    """About a page of print: 40 lines of some 60 characters."""
    words = para(i, 8).split()
    return [" ".join(words[k : k + 10]) for k in range(0, 400, 10)]


def ocr_pdf(folder: Path, n: int) -> Path:
    return make_scanned_pdf(folder / "scan.pdf", [("", scan_lines(i)) for i in range(n)])


def png(folder: Path, n: int) -> Path:
    path = folder / "scan.png"
    text_image(scan_lines(0), dpi=200).save(path)
    return path


FORMATS: dict[str, tuple[Callable[[Path, int], Path], int, str]] = {
    "pdf": (pdf, 100, "pages"),
    "docx": (docx, 2000, "paragraphs"),
    "html": (html, 2000, "sections"),
    "csv": (csv, 50_000, "rows"),
    "xlsx": (xlsx, 20_000, "rows"),
    "pptx": (pptx, 200, "slides"),
    "epub": (epub, 30, "chapters"),
    "ipynb": (ipynb, 1000, "cells"),
    "odt": (odt, 2000, "paragraphs"),
    "ods": (ods, 20_000, "rows"),
    "odp": (odp, 200, "slides"),
    "eml": (eml, 100, "attached pages"),
    "ocr-pdf": (ocr_pdf, 2, "scanned pages"),
    "png": (png, 1, "images"),
}
OCR_FORMATS = frozenset({"ocr-pdf", "png"})


def recognized_pages(doc: Document) -> int:
    """Pages of ``doc`` that hold text (OCR may stop at its time budget)."""
    bounds = [*doc.page_starts, len(doc.text)] if doc.page_starts else [0, len(doc.text)]
    return sum(1 for a, b in zip(bounds, bounds[1:], strict=False) if doc.text[a:b].strip())


def read_unbounded(path: Path) -> Document:
    """A read without OCR's time budgets, which would cut a page short on a busy machine."""
    forever = float("inf")
    if path.suffix == ".pdf":
        return read_pdf(path, ocr=True, ocr_budget=forever, ocr_page_budget=forever)
    return read_image(path, time_budget=forever, page_budget=forever)


def timed(path: Path, repeats: int, ocr: bool = False) -> tuple[float, float, Document]:
    """Median wall seconds and CPU seconds (all threads) of ``repeats`` reads, and the text."""
    times, cpu, doc = [], [], None
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        doc = read_unbounded(path) if ocr else read_document(path, max_bytes=10**9)
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    assert doc is not None
    return statistics.median(times), statistics.median(cpu), doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every file's size")
    parser.add_argument("--only", default="", help="comma-separated formats (default: all)")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(FORMATS)
    print("| format | file | units | read (s) | CPU (s) | units per second |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            make, count, unit = FORMATS[name]
            if name in OCR_FORMATS and not ocr_installed():
                print(f"| {name} | | | | | (the ocr extra is not installed) |")
                continue
            n = max(1, int(count * args.scale))
            path = make(Path(tmp), n)
            if name in OCR_FORMATS:
                read_document(path, max_bytes=10**9)  # load the models once
                took, cpu, doc = timed(path, 1, ocr=True)
                n = recognized_pages(doc)
            else:
                took, cpu, _ = timed(path, 3)
            size = path.stat().st_size / 1024 / 1024
            rate = f"{n / took:,.0f}" if n / took >= 10 else f"{n / took:.3g}"
            print(f"| {name} | {size:.1f} MB | {n:,} {unit} | {took:.2f} | {cpu:.2f} | {rate} |")


if __name__ == "__main__":
    main()
