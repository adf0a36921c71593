"""Anchors: citations made from a passage's own words, found again after the file changed.

A passage's offsets point elsewhere after one edit above it, and its chunk id is gone
after a reindex; its words are not. An anchor keeps a digest of the passage's words
(case-folded, punctuation and whitespace left out), twelve sample phrases of four words
at fixed places in it, and the eight-word phrases that stood just before and after it,
each phrase as a 24-bit CRC. To resolve it, the four-word phrases of the file's text as
indexed now are hashed; each sample found votes for where the passage would start.

* A start whose words have the digest is the passage itself, moved (``changed`` false).
* Otherwise the passage is looked for where its neighbours say it can be: between the
  two (beside the one it has, at the start or end of a file). If the two now stand side
  by side, the passage was cut out; if they are not both left, the text around it was
  rewritten: in both cases it is gone, even where a near copy stands elsewhere (a filing
  repeats its certifications and award terms almost word for word).
* There, the start where most samples lie in their order, within a quarter of the
  passage's length of their places, is the passage as edited, if at least ``SIMILAR``
  of the samples are there (``changed`` true, ``similarity`` the share found). Below
  that, the passage is no longer in the file.

The passage's first and last word are left out of the digest, since a chunk may start
or end inside a word; the characters they took are kept as counts, so the passage's own
offsets come back exactly when it is unchanged. Measured in docs/benchmarks.md.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
import zlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from micro_rag_mcp.core.errors import InvalidArgument

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

VERSION = 1
PHRASE = 4  # words in a sample phrase
SAMPLES = 12
SIMILAR = 0.5  # share of the samples an edited passage must keep, in place
CANDIDATES = 64  # starts (by their votes) looked at
CONTEXT = 8  # words of the neighbouring phrase kept on either side
_BASE, _MASK = 1_000_003, 0xFFFFFFFF  # phrase hash: a polynomial of word CRCs, mod 2**32
ADJACENT = 3  # neighbours at most this many words apart stand side by side
_HEAD = struct.Struct(">BBHBBI8s")  # version, flags, words, lead, tail, old start, digest
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# A word: a run of word characters, except that each CJK character is a word of its own.
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")


@dataclass(frozen=True, slots=True)
class Anchor:
    words: int  # words the digest covers
    lead: int  # characters of the passage before its first digested word
    tail: int  # characters after its last digested word
    start: int  # the passage's offset when the anchor was made (a tie breaker)
    digest: bytes
    samples: tuple[int, ...]
    before: int | None = None  # hash of the phrase that stood just before the passage
    after: int | None = None  # and just after it


@dataclass(frozen=True, slots=True)
class Found:
    """Where an anchor's passage is now: ``[char_start, char_end)`` of the text."""

    char_start: int
    char_end: int
    changed: bool
    similarity: float


def _words(text: str) -> list[re.Match[str]]:
    return list(_WORD.finditer(text))


def _digest(words: Sequence[str]) -> bytes:
    return hashlib.blake2b(
        "\x1f".join(words).encode("utf-8", "surrogatepass"), digest_size=8
    ).digest()


def _word_hashes(words: Sequence[str]) -> npt.NDArray[np.uint64]:
    import numpy as np

    return np.fromiter(
        (zlib.crc32(w.encode("utf-8", "surrogatepass")) for w in words),
        dtype=np.uint64,
        count=len(words),
    )


def _phrase_hashes(hashes: npt.NDArray[np.uint64], length: int) -> npt.NDArray[np.uint64]:
    """The 24-bit hash of every run of ``length`` words, from the words' own hashes (a
    polynomial of them), for the whole text at once."""
    import numpy as np

    count = len(hashes) - length + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    base, mask = np.uint64(_BASE), np.uint64(_MASK)
    acc = np.zeros(count, dtype=np.uint64)
    for k in range(length):
        acc = (acc * base + hashes[k : k + count]) & mask
    return acc & np.uint64(0xFFFFFF)


def _phrase_hash(words: Sequence[str]) -> int:
    return int(_phrase_hashes(_word_hashes(words), len(words))[0])


def sample_offsets(words: int) -> list[int]:
    """Where the samples of a passage of ``words`` words start (word offsets)."""
    last = max(0, words - PHRASE)
    return [round(i * last / (SAMPLES - 1)) for i in range(SAMPLES)]


def make_anchor(text: str, char_start: int, before: str = "", after: str = "") -> str:
    """The anchor of the passage ``text``, which starts at ``char_start`` in its file;
    ``before`` and ``after`` are the file's text around it (empty: not known)."""
    found = _words(text)
    if len(found) > 4:  # the edges may be parts of words: keep them out
        found = found[1:-1]
    words = [m.group().casefold() for m in found][:0xFFFF]
    found = found[: len(words)]
    lead = min(found[0].start(), 255) if found else 0
    tail = min(len(text) - found[-1].end(), 255) if found else 0
    flags, context = 0, b""
    for bit, side in (
        (1, _folded(before)[-CONTEXT - 1 : -1]),
        (2, _folded(after)[1 : CONTEXT + 1]),
    ):
        if len(side) == CONTEXT:
            flags |= bit
        context += (_phrase_hash(side) if len(side) == CONTEXT else 0).to_bytes(3, "big")
    start = min(char_start, 0xFFFFFFFF)
    head = _HEAD.pack(VERSION, flags, len(words), lead, tail, start, _digest(words))
    samples = b"".join(
        _phrase_hash(words[o : o + PHRASE]).to_bytes(3, "big") for o in sample_offsets(len(words))
    )
    return base64.urlsafe_b64encode(head + samples + context).decode("ascii").rstrip("=")


def _folded(text: str) -> list[str]:
    return [m.group().casefold() for m in _words(text)]


def parse_anchor(anchor: str) -> Anchor:
    """An anchor's parts, or ``InvalidArgument`` if this server did not make it."""
    wrong = f"anchor {anchor[:40]!r} is not an anchor from search; pass one as search returned it"
    try:
        raw = base64.urlsafe_b64decode(anchor + "=" * (-len(anchor) % 4))
    except (binascii.Error, ValueError):
        raise InvalidArgument(wrong) from None
    if len(raw) != _HEAD.size + 3 * (SAMPLES + 2) or raw[0] != VERSION:
        raise InvalidArgument(wrong)
    _, flags, words, lead, tail, start, digest = _HEAD.unpack_from(raw)
    body = raw[_HEAD.size :]
    hashes = [int.from_bytes(body[i : i + 3], "big") for i in range(0, len(body), 3)]
    before = hashes[SAMPLES] if flags & 1 else None
    after = hashes[SAMPLES + 1] if flags & 2 else None
    return Anchor(words, lead, tail, start, digest, tuple(hashes[:SAMPLES]), before, after)


def locate(text: str, anchor: Anchor) -> Found | None:
    """Where the anchor's passage is in ``text`` now, or None if it is no longer there."""
    import numpy as np

    matches = _words(text)
    words = [m.group().casefold() for m in matches]
    if anchor.words == 0 or not words:
        return None
    span = min(PHRASE, anchor.words)
    wanted = defaultdict(list)
    for i, (offset, h) in enumerate(zip(sample_offsets(anchor.words), anchor.samples, strict=True)):
        wanted[h].append((i, offset))
    places: dict[int, list[int]] = defaultdict(list)  # sample -> word positions in text
    starts: Counter[int] = Counter()
    hashes = _word_hashes(words)
    phrases = _phrase_hashes(hashes, span)
    for q in np.flatnonzero(np.isin(phrases, list(wanted))).tolist():
        for i, offset in wanted[int(phrases[q])]:
            places[i].append(q)
            starts[q - offset] += 1
    exact = [
        s
        for s, _ in starts.most_common(CANDIDATES)
        if 0 <= s <= len(words) - anchor.words
        and _digest(words[s : s + anchor.words]) == anchor.digest
    ]
    if exact:
        s = min(exact, key=lambda s: abs(matches[s].start() - anchor.start))
        end = matches[s + anchor.words - 1].end()
        return _span(text, matches[s].start(), end, anchor, changed=False, similarity=1.0)
    regions = _between_neighbours(hashes, anchor)
    if regions is None:  # cut out, or everything around it rewritten: not the same passage
        return None
    if regions:  # only the samples found where its neighbours say it can be
        offsets = sample_offsets(anchor.words)
        places = {
            i: [q for q in qs if any(a <= q < b for a, b in regions)] for i, qs in places.items()
        }
        starts = Counter(q - offsets[i] for i, qs in places.items() for q in qs)
    return _closest(text, matches, anchor, places, starts)


def _between_neighbours(
    hashes: npt.NDArray[np.uint64], anchor: Anchor
) -> list[tuple[int, int]] | None:
    """Where the passage can be, by the phrases that stood just before and after it: word
    ranges (empty: anywhere, the anchor knows no neighbour), or None when it cannot be
    there. An edited passage keeps its neighbours: between the two (or beside the one the
    anchor knows) is where it is looked for; where they now stand side by side, or are
    not both left, the passage is gone."""
    import numpy as np

    phrases = _phrase_hashes(hashes, CONTEXT)
    before = np.flatnonzero(phrases == anchor.before).tolist() if anchor.before is not None else []
    after = np.flatnonzero(phrases == anchor.after).tolist() if anchor.after is not None else []
    reach = anchor.words + max(8, anchor.words // 2)
    if anchor.before is not None and anchor.after is not None:
        if any(0 <= a - (b + CONTEXT) <= ADJACENT for b in before for a in after):
            return None
        regions = [(b + CONTEXT, a) for b in before for a in after if 0 < a - b - CONTEXT <= reach]
    elif anchor.before is not None:
        regions = [(b + CONTEXT, b + CONTEXT + reach) for b in before]
    elif anchor.after is not None:
        regions = [(max(0, a - reach), a) for a in after]
    else:
        return []
    return regions or None


def _closest(
    text: str,
    matches: list[re.Match[str]],
    anchor: Anchor,
    places: dict[int, list[int]],
    starts: Counter[int],
) -> Found | None:
    """The edited passage: the start most samples agree with, in order and near their places."""
    offsets = sample_offsets(anchor.words)
    slack = max(3, anchor.words // 4)
    best: list[tuple[int, int]] = []  # (sample, word position) of the samples kept
    for s, _ in starts.most_common(CANDIDATES):
        kept: list[tuple[int, int]] = []
        for i, offset in enumerate(offsets):
            after = kept[-1][1] if kept else -1
            near = [q for q in places.get(i, ()) if abs(q - (s + offset)) <= slack and q > after]
            if near:
                kept.append((i, min(near, key=lambda q: abs(q - (s + offset)))))
        if len(kept) > len(best):
            best = kept
    if len(best) < SIMILAR * SAMPLES:
        return None
    (i0, q0), (i1, q1) = best[0], best[-1]
    first = max(0, q0 - offsets[i0])
    last = min(len(matches), q1 + anchor.words - offsets[i1]) - 1
    similarity = len(best) / SAMPLES
    start, end = matches[first].start(), matches[last].end()
    return _span(text, start, end, anchor, changed=True, similarity=similarity)


def _span(
    text: str, start: int, end: int, anchor: Anchor, *, changed: bool, similarity: float
) -> Found:
    return Found(
        char_start=max(0, start - anchor.lead),
        char_end=min(len(text), end + anchor.tail),
        changed=changed,
        similarity=round(similarity, 3),
    )
