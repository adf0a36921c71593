"""The spaces a recognized line lost, put back from the gaps between its words' pixels.

The recognizer (PP-OCRv4, trained mostly on Chinese) emits a space between two English
words only when it is sure, and JPEG's ringing around letters makes it unsure: a line
of capitals read from a JPEG came out as ``THISISATESTOFTHENATIONALEMERGENCY`` while the
same line from a PNG kept some of its spaces, and words run together match no question.
The line's own image says where its words end: a word gap is a run of columns without
ink at least a quarter of the line's height wide and twice the line's median gap (gaps
between letters are at most a fifth of the height; between words over a third, in 14 pt
Helvetica at 150 and 300 dpi, from PNG and JPEG alike). Each character's position comes
from the recognizer's own decoding step (its CTC column); a space goes between two
characters that have a word gap between them, if both are Latin letters or digits but
not two digits (a monospaced ``4471`` has wide gaps around its ``1``; CJK text has no
spaces); a space the recognizer emitted stays.
"""

from __future__ import annotations

from typing import Any

MIN_GAP_HEIGHTS = 0.25  # a word gap is at least this share of the line's height...
MIN_GAP_MEDIANS = 2.0  # ...and this many times its median gap between inked columns


def respaced(crop: Any, text: str, columns: list[int], steps: float) -> str:
    """``text`` read from ``crop`` (a line's pixels, height × width × channels), with a
    space between two characters that a word gap separates.

    ``columns[i]``: the decoding step of ``text[i]``; ``steps``: the steps the line's
    width spans (the recognizer's ``return_word_box`` details).
    """
    latin_pairs = any(_latin(a) and _latin(b) for a, b in zip(text, text[1:], strict=False))
    if len(columns) != len(text) or steps <= 0 or not latin_pairs:
        return text
    gaps = word_gaps(crop)
    if not gaps:
        return text
    width = crop.shape[1]
    centers = [(start + end) / 2 for start, end in gaps]
    xs = [(column + 0.5) / steps * width for column in columns]
    out = [text[0]] if text else []
    for i in range(1, len(text)):
        left, right = text[i - 1], text[i]
        between = (center for center in centers if xs[i - 1] < center < xs[i])
        if _latin(left) and _latin(right) and not (left + right).isdigit() and any(between):
            out.append(" ")
        out.append(text[i])
    return "".join(out)


def word_gaps(crop: Any) -> list[tuple[int, int]]:
    """``(start, end)`` columns of each gap between words in a line's pixels."""
    import numpy as np

    gray = crop.mean(axis=2) if crop.ndim == 3 else crop.astype(float)
    if gray.size == 0:
        return []
    dark = gray <= _otsu(gray.astype(np.uint8))
    ink = dark if dark.mean() < 0.5 else ~dark  # the text is the smaller part
    inked = ink.sum(axis=0) >= max(1, ink.shape[0] // 20)
    gaps: list[tuple[int, int]] = []
    start: int | None = None
    for x, has_ink in enumerate(inked.tolist()):
        if not has_ink and start is None:
            start = x
        elif has_ink and start is not None:
            gaps.append((start, x))
            start = None
    inner = [(a, b) for a, b in gaps if a > 0]  # the margin before the first letter is no gap
    if not inner:
        return []
    widths = sorted(b - a for a, b in inner)
    least = max(MIN_GAP_HEIGHTS * ink.shape[0], MIN_GAP_MEDIANS * widths[len(widths) // 2])
    return [(a, b) for a, b in inner if b - a >= least]


def _otsu(gray: Any) -> int:
    """The threshold that best splits ``gray``'s values in two (Otsu's method)."""
    import numpy as np

    counts = np.bincount(gray.ravel(), minlength=256).astype(float)
    share = counts / counts.sum()
    below = np.cumsum(share)
    mean_below = np.cumsum(share * np.arange(256))
    spread = (mean_below[-1] * below - mean_below) ** 2 / (below * (1 - below) + 1e-12)
    return int(np.argmax(spread))


def _latin(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()
