"""OCR's spaces between words, as the recognizer emits them and as ``ocr_spacing``
puts them back: lines printed in four fonts, saved as PNG and as JPEG, recognized.

    .venv/bin/python bench/ocr_spacing.py [--dpi 150] [--quality 75]

Prints, per font and format, the lines read with words run together (a line that
differs from the printed one only by missing spaces) before and after the spaces are
put back, and the lines that differ otherwise after (a misread letter, a split word). Needs the
``ocr`` extra and the test extras (reportlab, pypdfium2).
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from micro_rag_mcp.ingest.readers.ocr import _engine, _lines  # noqa: E402
from micro_rag_mcp.ingest.readers.ocr_spacing import respaced  # noqa: E402

LINES = [
    "THIS IS A TEST OF THE NATIONAL EMERGENCY ALERT SYSTEM",
    "NO ACTUAL EMERGENCY",
    "Invoice 4471 for the harbour crane repair",
    "Total due within thirty days",
    "Minimum illumination in the hall",
]
FONTS = ("Helvetica", "Helvetica-Bold", "Times-Roman", "Courier")


def printed(font: str, dpi: int) -> Any:
    import pypdfium2 as pdfium
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    size = (520.0, 40.0 + 22.0 * len(LINES))
    pdf = canvas.Canvas(buf, pagesize=size, invariant=True)
    pdf.setFont(font, 14)
    for i, line in enumerate(LINES):
        pdf.drawString(20, size[1] - 30 - 22 * i, line)
    pdf.showPage()
    pdf.save()
    document = pdfium.PdfDocument(buf.getvalue())
    try:
        return document[0].render(scale=dpi / 72).to_pil().convert("L")
    finally:
        document.close()


def read_lines(image: Any) -> tuple[list[str], list[str]]:
    """The page's lines as recognized, and respaced (boxes of a row joined, as read)."""
    import numpy as np

    engine = _engine()
    pixels = np.asarray(image.convert("RGB"))[:, :, ::-1]
    pixels, _, _ = engine.preprocess(pixels)
    pixels, _ = engine.maybe_add_letterbox(pixels, {})
    boxes, _ = engine.auto_text_det(pixels)
    crops = engine.get_crop_img_list(pixels, boxes)
    results, _ = engine.text_rec(crops, return_word_box=True)
    raw, fixed = [], []
    for box, crop, (text, _, details) in zip(boxes, crops, results, strict=True):
        columns = [column for word in details[2] for column in word]
        raw.append((box, text))
        fixed.append((box, respaced(crop, text, columns, details[0])))
    return _lines(raw).split("\n"), _lines(fixed).split("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dpi", type=int, default=150)
    parser.add_argument("--quality", type=int, default=75)
    args = parser.parse_args()
    print("| font | format | run together as recognized | after | other differences |")
    print("| --- | --- | ---: | ---: | ---: |")
    for font in FONTS:
        image = printed(font, args.dpi)
        for kind in ("PNG", "JPEG"):
            buf = io.BytesIO()
            image.save(buf, kind, **({"quality": args.quality} if kind == "JPEG" else {}))
            buf.seek(0)
            from PIL import Image

            raw, fixed = read_lines(Image.open(buf))
            before = sum(_run_together(line) for line in raw)
            after = sum(_run_together(line) for line in fixed)
            other = sum(line not in LINES and not _run_together(line) for line in fixed)
            print(f"| {font} | {kind} | {before} | {after} | {other} |")


def _run_together(text: str) -> bool:
    """Whether ``text`` is a printed line with some of its spaces missing."""
    squeezed = text.replace(" ", "")
    return text not in LINES and any(squeezed == line.replace(" ", "") for line in LINES)


if __name__ == "__main__":
    main()
