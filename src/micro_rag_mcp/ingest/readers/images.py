"""Image files (PNG, JPEG, TIFF), read by OCR when the ``ocr`` extra is installed.

Every frame of a multi-page TIFF (a fax, a scanner's batch) is a page. The image is
decoded by Pillow (installed with the extra) after its declared size is checked, so a
small file that claims a huge canvas is refused before its pixels are decoded.
"""

from __future__ import annotations

import logging
from pathlib import Path

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers.document import Document, normalize_text
from micro_rag_mcp.ingest.readers.guards import Budget, short
from micro_rag_mcp.ingest.readers.ocr import (
    FILE_BUDGET_S,
    INSTALL_HINT,
    OCR_LOCATOR,
    PAGE_BUDGET_S,
    recognize,
)

logger = logging.getLogger(__name__)

MAX_PIXELS = 100_000_000  # a frame claiming more is refused undecoded
MAX_FRAMES = 1000


def read_image(
    path: Path, *, time_budget: float = FILE_BUDGET_S, page_budget: float = PAGE_BUDGET_S
) -> Document:
    """The text OCR finds in each frame; frames are pages when there are several.

    Frames are started while ``time_budget`` lasts; each stops after ``page_budget``.
    """
    try:
        from PIL import Image, ImageOps, ImageSequence, UnidentifiedImageError
    except ImportError as e:
        raise ReadError(f"images are read by OCR, which is not installed: {INSTALL_HINT}") from e
    try:
        image = Image.open(path)
    except (UnidentifiedImageError, Image.DecompressionBombError, SyntaxError) as e:
        raise ReadError(f"not a readable image: {short(e)}") from e
    budget = Budget(time_budget)
    texts: list[str] = []
    with image:
        for number, frame in enumerate(ImageSequence.Iterator(image), 1):
            if number > MAX_FRAMES or (number > 1 and budget.spent()):
                logger.warning("%s: OCR stopped before frame %d (bounds)", path, number)
                break
            width, height = frame.size
            if width * height > MAX_PIXELS:
                raise ReadError(f"refused: an image of {width}×{height} pixels (over 100 million)")
            upright = ImageOps.exif_transpose(frame)
            where = f"{path} frame {number}"
            texts.append(normalize_text(recognize(upright, where=where, budget_s=page_budget)))
    if not any(texts):
        raise ReadError("no text recognized in the image")
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 2
    return Document(
        "\n\n".join(texts),
        page_starts=tuple(starts) if len(texts) > 1 else (),
        locators=((0, OCR_LOCATOR),),
    )
