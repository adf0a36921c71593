"""Anchors: citations made from a passage's own words, found again after the file changed.

A passage's offsets point elsewhere after one edit above it, and its chunk id is gone
after a reindex; its words are not. An anchor keeps a digest of the passage's words
(case-folded, punctuation and whitespace left out) and twelve sample phrases of four
words at fixed places in it, each as a 24-bit CRC. To resolve it, every four-word phrase
of the file's text as indexed now is hashed once; each sample found votes for where the
passage would start. A start whose words have the digest is the passage itself, moved
(``changed`` false). Otherwise the start where most samples lie in their order, within a
quarter of the passage's length of their places, is the passage as edited, if at least
``SIMILAR`` of the samples are there (``changed`` true, ``similarity`` the share found).
Below that, the passage is no longer in the file.

Twelve phrases of four words: a random four-word phrase of a filing repeats elsewhere
in the same filing now and then, twelve in their order by chance never did on the dev
sets (docs/benchmarks.md). The passage's first and last word are left out of the digest,
since a chunk may start or end inside a word; the characters they took are kept as
counts, so the passage's own offsets come back exactly when it is unchanged.
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

from micro_rag_mcp.errors import InvalidArgument

VERSION = 1
PHRASE = 4  # words in a sample phrase
SAMPLES = 12
SIMILAR = 0.5  # share of the samples an edited passage must keep, in place
CANDIDATES = 64  # starts (by their votes) looked at
_HEAD = struct.Struct(">BHBBI8s")  # version, words, lead chars, tail chars, old start, digest
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


def _phrase_hash(words: Sequence[str]) -> int:
    return zlib.crc32("\x1f".join(words).encode("utf-8", "surrogatepass")) & 0xFFFFFF


def sample_offsets(words: int) -> list[int]:
    """Where the samples of a passage of ``words`` words start (word offsets)."""
    last = max(0, words - PHRASE)
    return [round(i * last / (SAMPLES - 1)) for i in range(SAMPLES)]


def make_anchor(text: str, char_start: int) -> str:
    """The anchor of the passage ``text``, which starts at ``char_start`` in its file."""
    found = _words(text)
    if len(found) > 4:  # the edges may be parts of words: keep them out
        found = found[1:-1]
    words = [m.group().casefold() for m in found][:0xFFFF]
    found = found[: len(words)]
    lead = min(found[0].start(), 255) if found else 0
    tail = min(len(text) - found[-1].end(), 255) if found else 0
    head = _HEAD.pack(VERSION, len(words), lead, tail, min(char_start, 0xFFFFFFFF), _digest(words))
    samples = b"".join(
        _phrase_hash(words[o : o + PHRASE]).to_bytes(3, "big") for o in sample_offsets(len(words))
    )
    return base64.urlsafe_b64encode(head + samples).decode("ascii").rstrip("=")


def parse_anchor(anchor: str) -> Anchor:
    """An anchor's parts, or ``InvalidArgument`` if this server did not make it."""
    wrong = f"anchor {anchor[:40]!r} is not an anchor from search; pass one as search returned it"
    try:
        raw = base64.urlsafe_b64decode(anchor + "=" * (-len(anchor) % 4))
    except (binascii.Error, ValueError):
        raise InvalidArgument(wrong) from None
    if len(raw) != _HEAD.size + 3 * SAMPLES or raw[0] != VERSION:
        raise InvalidArgument(wrong)
    _, words, lead, tail, start, digest = _HEAD.unpack_from(raw)
    body = raw[_HEAD.size :]
    samples = tuple(int.from_bytes(body[i : i + 3], "big") for i in range(0, len(body), 3))
    return Anchor(words, lead, tail, start, digest, samples)


def locate(text: str, anchor: Anchor) -> Found | None:
    """Where the anchor's passage is in ``text`` now, or None if it is no longer there."""
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
    for q in range(len(words) - span + 1):
        for i, offset in wanted.get(_phrase_hash(words[q : q + span]), ()):
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
    return _closest(text, matches, anchor, places, starts)


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
