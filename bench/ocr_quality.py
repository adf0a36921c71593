"""OCR quality on real pages: rasterize PDF pages, index the images, compare with the text.

    .venv/bin/python bench/ocr_quality.py WORK PDF[:PAGE] ... [--dpi 200] [--scan-pages 2]

Each ``PDF:PAGE`` (page 1 by default) is rasterized with ``pdftoppm`` (poppler-utils;
pypdfium2 where it is missing) into ``WORK/scans/NAME-pPAGE.png``; the first
``--scan-pages`` of them are also put together as ``WORK/scans/image-only.pdf``, a PDF
with no text layer. The folder is indexed with
``micro-rag index`` (the ocr extra must be installed), then for every page:

- words recovered: the share of the words of the page's own text layer (the truth, read
  from the original PDF) that the indexed text holds, counted with repeats;
- rank: where ``micro-rag search`` for one sentence of the page (its longest line of
  the truth) puts that image, or that page of the image-only PDF, in its top 5 ("-":
  not there).

With ``--unbounded`` it reads the same images and scan in this process without time
budgets instead (the recognizer's own quality, apart from what a loaded machine cuts) and
prints the words recovered, and the seconds each page took.

Work already done in ``WORK`` is reused (delete it to start over).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from micro_rag_mcp.ingest.readers.images import read_image  # noqa: E402
from micro_rag_mcp.ingest.readers.pdf import read_pdf  # noqa: E402

BIN = Path(sys.executable).parent
WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> collections.Counter[str]:
    return collections.Counter(WORD.findall(text.lower()))


def recall(truth: str, found: str) -> float:
    want = words(truth)
    return sum((want & words(found)).values()) / max(1, sum(want.values()))


def truth_page(pdf: Path, page: int) -> str:
    doc = read_pdf(pdf, ocr=False)
    starts = [*doc.page_starts, len(doc.text)]
    return doc.text[starts[page - 1] : starts[page]]


def sentence(text: str) -> str:
    """The page's longest line of eight words or more, cut to twelve words."""
    lines = [line for line in text.splitlines() if len(line.split()) >= 8] or [text]
    return " ".join(max(lines, key=len).split()[:12])


def rasterize(pdf: Path, page: int, out: Path, dpi: int) -> Path:
    if not out.exists() and shutil.which("pdftoppm") is None:  # pdfium, which the project has
        import pypdfium2 as pdfium

        document = pdfium.PdfDocument(str(pdf))
        try:
            document[page - 1].render(scale=dpi / 72).to_pil().save(out)
        finally:
            document.close()
    if not out.exists():
        stem = out.with_suffix("")
        subprocess.run(
            ["pdftoppm", "-r", str(dpi), "-png", "-singlefile", "-f", str(page), "-l", str(page)]
            + [str(pdf), str(stem)],
            check=True,
        )
    return out


def image_only_pdf(images: list[Path], out: Path) -> Path:
    from PIL import Image
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    if out.exists():
        return out
    pdf = canvas.Canvas(str(out), invariant=True)
    for path in images:
        with Image.open(path) as image:
            width, height = image.size[0] * 72 / 200, image.size[1] * 72 / 200
            pdf.setPageSize((width, height))
            pdf.drawImage(ImageReader(image), 0, 0, width=width, height=height)
        pdf.showPage()
    pdf.save()
    return out


def cli(*args: str) -> str:
    done = subprocess.run([str(BIN / "micro-rag"), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"micro-rag {args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def indexed_text(folder: Path, name: str, page: int | None) -> str:
    args = ["read", str(folder), name, "--json", "--max-chars", "50000"]
    result = json.loads(cli(*args, *(["--page", str(page)] if page else [])))
    return str(result.get("text", ""))


def rank(folder: Path, query: str, name: str, page: int | None) -> str:
    """Where the page comes in a search for ``query`` (top 5), or "-" when it does not."""
    result = json.loads(cli("search", str(folder), query, "-k", "5", "--json"))
    for hit in result.get("results", []):
        if hit.get("path") == name and (page is None or hit.get("page") == page):
            return str(hit.get("rank"))
    return "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("pages", nargs="+", help="PDF or PDF:PAGE")
    parser.add_argument("--dpi", type=int, default=200)
    parser.add_argument("--scan-pages", type=int, default=2)
    parser.add_argument("--unbounded", action="store_true", help="in process, no budgets")
    args = parser.parse_args()
    folder = args.work / "scans"
    folder.mkdir(parents=True, exist_ok=True)
    pages: list[tuple[Path, int, Path]] = []
    for spec in args.pages:
        name, _, number = spec.partition(":")
        pdf, page = Path(name), int(number or 1)
        image = rasterize(pdf, page, folder / f"{pdf.stem}-p{page}.png", args.dpi)
        pages.append((pdf, page, image))
    first = [image for _, _, image in pages[: args.scan_pages]]
    scan = image_only_pdf(first, folder / "image-only.pdf")
    if args.unbounded:
        unbounded(pages, scan, args.scan_pages)
        return
    started = time.perf_counter()
    cli("index", str(folder))
    print(
        f"indexed {len(pages)} images and a {args.scan_pages}-page scan in "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    print("| page | words | image: recovered | rank | image-only PDF: recovered | rank |")
    print("| --- | ---: | ---: | --- | ---: | --- |")
    for index, (pdf, page, image) in enumerate(pages):
        truth = truth_page(pdf, page)
        query = sentence(truth)
        cells = [f"{pdf.name} p{page}", f"{sum(words(truth).values()):,}"]
        cells += [f"{recall(truth, indexed_text(folder, image.name, None)):.0%}"]
        cells += [rank(folder, query, image.name, None)]
        if index < args.scan_pages:
            text = indexed_text(folder, scan.name, index + 1)
            cells += [f"{recall(truth, text):.0%}"]
            cells += [rank(folder, query, scan.name, index + 1)]
        else:
            cells += ["", ""]
        print("| " + " | ".join(cells) + " |")


def unbounded(pages: list[tuple[Path, int, Path]], scan: Path, scan_pages: int) -> None:
    forever = float("inf")
    print("| page | words | image: recovered | s | image-only PDF: recovered |")
    print("| --- | ---: | ---: | ---: | ---: |")
    started = time.perf_counter()
    doc = read_pdf(scan, ocr=True, ocr_budget=forever, ocr_page_budget=forever)
    scan_s = time.perf_counter() - started
    starts = [*doc.page_starts, len(doc.text)]
    for index, (pdf, page, image) in enumerate(pages):
        truth = truth_page(pdf, page)
        started = time.perf_counter()
        text = read_image(image, time_budget=forever, page_budget=forever).text
        took = time.perf_counter() - started
        cells = [f"{pdf.name} p{page}", f"{sum(words(truth).values()):,}"]
        cells += [f"{recall(truth, text):.0%}", f"{took:.0f}"]
        in_scan = doc.text[starts[index] : starts[index + 1]] if index < scan_pages else None
        cells += [f"{recall(truth, in_scan):.0%}" if in_scan is not None else ""]
        print("| " + " | ".join(cells) + " |")
    print(f"image-only PDF: {scan_pages} pages in {scan_s:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
