"""Runs of encoded bytes in extracted text (base64, long hex), cut before indexing.

A mail part nobody decoded, a ``data:`` URI, a PEM block or an image inlined in a
notebook or a JSON file reaches a reader's text as a run of base64: thousands of
"words" that match no question, yet fill passages and come back as filler results
(145,000 characters of one forwarded message's base64 once). ``without_encoded_runs``
cuts such runs out of a document and moves its marks (pages, sections, locators, rows,
breaks) with the text that stays; ``read_document`` applies it to every format.

A run is a sequence of segments of the base64 alphabet (``[A-Za-z0-9+/=]``), each at
least ``MIN_SEGMENT`` characters long and mixed as encoded bytes are (upper and lower
case letters and digits, the class changing at least every ``1 / MIN_CHANGES``
characters), separated by nothing but a few spaces or punctuation (line breaks, quotes,
commas); it is cut when its segments hold ``MIN_RUN`` characters. A pure-hex segment
counts only past ``MAX_HASH_HEX`` characters. What stays: URLs (no segment of a word
with ``://`` counts), hashes (hex up to 128 characters; a base64 digest is shorter than
a run), CJK text and prose (not of the alphabet), identifiers (``snake_case`` breaks at
its underscores; ``camelCase`` and ``XMLHttpRequest2`` change class far less often).
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import replace

from micro_rag_mcp.ingest.readers.document import Document

MIN_SEGMENT = 16
MIN_RUN = 200
MAX_HASH_HEX = 128  # SHA-512 in hex; a longer hex run is a dump
MIN_CHANGES = 0.4  # share of adjacent characters of different classes (random base64: 0.64)
MAX_GAP = 8  # characters between two segments of one run, none a letter or digit
MAX_URL_PREFIX = 2048  # characters looked back for the start of a segment's word

_SEGMENT = re.compile(rf"[A-Za-z0-9+/=]{{{MIN_SEGMENT},}}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_CLASS = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=",
    "A" * 26 + "a" * 26 + "0" * 10 + "+++",
)


def without_encoded_runs(doc: Document) -> Document:
    """``doc`` with its encoded runs cut out; its marks stay at the text they marked."""
    spans = encoded_runs(doc.text)
    if not spans:
        return doc
    starts = [start for start, _ in spans]
    cut_before = [0, *itertools.accumulate(end - start for start, end in spans)]

    def moved(offset: int) -> int:
        index = bisect.bisect_right(starts, offset) - 1  # the last run starting at or before
        if index < 0:
            return offset
        start, end = spans[index]
        return offset - cut_before[index] - (min(offset, end) - start)

    ends = [0, *(end for _, end in spans)]
    kept = [doc.text[ends[index] : start] for index, start in enumerate(starts)]
    return replace(
        doc,
        text="".join(kept) + doc.text[spans[-1][1] :],
        page_starts=tuple(moved(offset) for offset in doc.page_starts),
        sections=tuple((moved(offset), path) for offset, path in doc.sections),
        locators=tuple((moved(offset), label) for offset, label in doc.locators),
        rows=tuple((moved(offset), row) for offset, row in doc.rows),
        breaks=tuple(moved(offset) for offset in doc.breaks),
    )


def encoded_runs(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each encoded run in ``text``, in order, disjoint."""
    runs: list[tuple[int, int]] = []
    start = end = held = 0
    for match in _SEGMENT.finditer(text):
        if not _encoded(match.group()) or _in_url(text, match.start()):
            continue
        near = held and match.start() - end <= MAX_GAP
        if near and not any(ch.isalnum() for ch in text[end : match.start()]):
            end, held = match.end(), held + len(match.group())
            continue
        if held >= MIN_RUN:
            runs.append((start, end))
        start, end, held = match.start(), match.end(), len(match.group())
    if held >= MIN_RUN:
        runs.append((start, end))
    return runs


def _encoded(segment: str) -> bool:
    """Whether ``segment`` looks like encoded bytes rather than a word or a hash."""
    if _HEX.fullmatch(segment):
        return len(segment) > MAX_HASH_HEX and not segment.isdigit()
    classes = segment.translate(_CLASS)
    if not ("A" in classes and "a" in classes and "0" in classes):
        return False
    changes = sum(1 for a, b in itertools.pairwise(classes) if a != b)
    return changes >= MIN_CHANGES * (len(segment) - 1)


def _in_url(text: str, start: int) -> bool:
    """Whether the segment at ``start`` is part of a URL (its word holds ``://``)."""
    low = max(0, start - MAX_URL_PREFIX)
    word_start = max(text.rfind(" ", low, start), text.rfind("\n", low, start), low - 1) + 1
    word = text[word_start : start + 2]
    return "://" in word or word.startswith("www.")
