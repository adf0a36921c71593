"""Text recognition for scans: PDF pages without a text layer and image files.

Optional (``pip install 'micro-rag-mcp[ocr]'``): RapidOCR runs the PP-OCRv4 detection
and recognition models, shipped inside the ``rapidocr-onnxruntime`` wheel, on the
onnxruntime the project already has; nothing is downloaded. Without the extra, image
files are not indexed and a scanned PDF fails with a reason that says how to turn it on.

Recognition runs in the reader process like every reader. Each page has its own time
budget, checked between batches of text lines: the lines not reached are left out with a
warning, so one dense page cannot use up the file's time. A page is at most
``MAX_SIDE_PX`` on its longer side (the size the detector works at), which bounds the
detector's one uninterruptible step. A page of print costs about 5 CPU seconds (3-5 s on
two idle cores, docs/formats.md), so 30 s a page and 60 s a file leave room for a busy
machine and end well within the reader's 120 s limit. The angle classifier is not run:
scans are upright, photos are turned by their EXIF orientation. The spaces the
recognizer drops between English words (most often in a JPEG) are put back from the
line's pixels (``ocr_spacing``).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import resource
from typing import Any

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.core.formats import EXTRAS, install_hint
from micro_rag_mcp.ingest.readers.guards import Budget, short
from micro_rag_mcp.ingest.readers.ocr_spacing import respaced

logger = logging.getLogger(__name__)

OCR_MODULE = EXTRAS["ocr"][0]
INSTALL_HINT = install_hint("ocr")
OCR_LOCATOR = "OCR"  # the locator of text that was recognized, not read from a text layer
PAGE_BUDGET_S = 30.0
FILE_BUDGET_S = 60.0  # pages are started only while the file's budget lasts
RENDER_DPI = 200
MAX_SIDE_PX = 2000
_LINES_PER_BATCH = 12
_SAME_LINE = 0.5  # boxes whose tops differ by less than this share of a height share a line


def ocr_installed() -> bool:
    """Whether the ``ocr`` extra is installed (found, not imported)."""
    return importlib.util.find_spec(OCR_MODULE) is not None


@functools.cache
def _engine() -> Any:
    """The recognizer, built once per reader process (loading the models takes ~1 s).

    A recognizer that cannot start (``opencv-python`` needs the system's libGL, which a
    bare server may lack) is a ``ReadError`` naming the cause; a transient one, since the
    cause is the machine's, so the file is read again once it is fixed.
    """
    try:
        from rapidocr_onnxruntime import RapidOCR

        return RapidOCR(use_cls=False, max_side_len=MAX_SIDE_PX, print_verbose=False)
    except (ImportError, OSError) as e:
        raise ReadError(f"OCR could not start: {short(e)}", transient=True) from e


def recognize(image: Any, *, where: str, budget_s: float = PAGE_BUDGET_S) -> str:
    """The text in ``image`` (a PIL image), lines in reading order; "" when none is found.

    ``where`` names the page in warnings ("scan.pdf page 3"). A recognizer that fails (out
    of memory, most often) is a ``ReadError`` of one sentence.
    """
    try:
        return _recognize(image, where, budget_s)
    except (ReadError, OSError):  # an OSError is Pillow decoding a damaged file's pixels
        raise
    except Exception as e:  # NumPy, OpenCV and onnxruntime raise types of their own
        raise ReadError(_failure_reason(e)) from e


def _failure_reason(e: Exception) -> str:
    """What went wrong in the recognizer, in one sentence.

    RapidOCR wraps onnxruntime's error in one whose message is a whole traceback, so the
    cause is read instead; onnxruntime's own message ends with its status ("Status
    Message: std::bad_alloc").
    """
    cause = e.__cause__ if isinstance(e.__cause__, Exception) else e
    lines = str(cause).strip().splitlines()
    detail = lines[-1].rsplit("Status Message:", 1)[-1].strip() if lines else ""
    if isinstance(cause, MemoryError) or "bad_alloc" in detail:
        limit, _ = resource.getrlimit(resource.RLIMIT_AS)
        if limit == resource.RLIM_INFINITY:
            return "refused: OCR ran out of memory"
        return f"refused: OCR needs more than the reader's {limit // 1024**2:,} MB of memory"
    return f"OCR failed: {short(detail or type(cause).__name__)}"


def _recognize(image: Any, where: str, budget_s: float) -> str:
    import numpy as np

    engine = _engine()
    budget = Budget(budget_s)  # within its file's, and an e-mail's
    pixels = np.asarray(_bounded(image.convert("RGB")))[:, :, ::-1]  # OpenCV's BGR order
    pixels, _, _ = engine.preprocess(pixels)
    pixels, _ = engine.maybe_add_letterbox(pixels, {})
    boxes, _ = engine.auto_text_det(pixels)
    if boxes is None:
        return ""
    crops = engine.get_crop_img_list(pixels, boxes)
    found: list[tuple[Any, str]] = []
    for first in range(0, len(crops), _LINES_PER_BATCH):
        if first and budget.spent():
            logger.warning(
                "%s: OCR stopped after %d of %d lines (%gs page budget)",
                where,
                first,
                len(crops),
                budget_s,
            )
            break
        batch = crops[first : first + _LINES_PER_BATCH]
        results, _ = engine.text_rec(batch, return_word_box=True)
        for box, crop, (text, score, details) in zip(boxes[first:], batch, results, strict=False):
            if text.strip() and score >= engine.text_score:
                columns = [column for word in details[2] for column in word]
                found.append((box, respaced(crop, text, columns, details[0]).strip()))
    return _lines(found)


def _bounded(image: Any) -> Any:
    """``image`` scaled down so that its longer side is at most ``MAX_SIDE_PX``."""
    longer = max(image.size)
    if longer <= MAX_SIDE_PX:
        return image
    scale = MAX_SIDE_PX / longer
    return image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))


def _lines(found: list[tuple[Any, str]]) -> str:
    """Boxes (sorted top to bottom, then left to right) joined: a line per row of boxes."""
    lines: list[list[str]] = []
    last_top = last_height = 0.0
    for box, text in found:
        top = float(min(point[1] for point in box))
        height = float(max(point[1] for point in box)) - top
        if lines and abs(top - last_top) < _SAME_LINE * max(height, last_height, 1.0):
            lines[-1].append(text)
            continue
        lines.append([text])
        last_top, last_height = top, height
    return "\n".join(" ".join(parts) for parts in lines)
