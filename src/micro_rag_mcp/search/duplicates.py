"""One passage, one result: a passage that repeats one ranked above it is folded into it.

A handbook repeats its expense rule in every chapter, a folder holds ``final.docx`` and
``final (1).docx``: each copy is a chunk of its own, and without this a query that finds
one finds them all and fills the answer with the same words. Here the hits are taken in
rank order, and a hit whose words mostly stand in one already kept is not a result of
its own: the kept one names it among its other places (``Hit.repeats``), so ``top_k``
counts distinct passages.

"Near-identical" is measured on words: the text case-folded, punctuation and whitespace
left out (as ``anchors`` digest a passage), cut into overlapping phrases of ``PHRASE``
words. Two passages are one when at least ``SHARE`` of the phrases of the shorter one
are phrases of the other. Copies that differ in case, spacing, punctuation or a line
break agree exactly; a repeated section under another heading, or with a word changed,
keeps nearly all its phrases. A word that differs breaks every phrase around it, so
"A narwhal was seen near the harbour" is not "A walrus was seen ..." (half their
phrases are shared), nor are two quarters' passages of one form with their own figures
(at half, sec10q_dev's Recall@5 lost 2.9 points to such folds, at four fifths 1.6). A paragraph
repeated inside other text is folded only where it is nearly all of its passage; a
shared paragraph word for word (24 phrases in a row) was tried and cost sec10q_dev 2.6
more points (docs/benchmarks.md, "One passage, one result"). Consecutive chunks of one
file are never folded: what they share is their overlap. Each kept passage's phrases
are indexed, so a candidate is compared only with those it shares a phrase with.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace

from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.core.results import Hit

PHRASE = 5  # words in a phrase
SHARE = 0.8  # share of the shorter passage's phrases the other must hold
SHOWN = 5  # other places a result names; ``repeats`` counts them all
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Phrases:
    """A passage's hashed ``PHRASE``-word phrases."""

    found: frozenset[int]


def phrases(text: str) -> Phrases:
    """The phrases of a text's words (one for a text of ``PHRASE`` words or fewer)."""
    words = _WORD.findall(text.casefold())
    if len(words) <= PHRASE:
        return Phrases(frozenset({hash(tuple(words))}))
    starts = range(len(words) - PHRASE + 1)
    return Phrases(frozenset(hash(tuple(words[i : i + PHRASE])) for i in starts))


def repeats(a: Phrases, b: Phrases, shared: int | None = None) -> bool:
    """Whether two passages are one (see the module's doc); ``shared``: how many
    phrases they share, if counted already."""
    shorter = min(len(a.found), len(b.found))
    if shared is None:
        shared = len(a.found & b.found)
    return shorter > 0 and shared >= SHARE * shorter


def neighbours(a: StoredChunk, b: StoredChunk) -> bool:
    """Consecutive chunks of one file: what they share is the chunks' overlap."""
    return a.path == b.path and abs(a.chunk_index - b.chunk_index) == 1


class Distinct:
    """Hits taken in rank order, each repeat folded into the first kept hit it repeats."""

    def __init__(self) -> None:
        self._kept: list[Hit] = []
        self._phrases: list[Phrases] = []
        self._others: list[list[StoredChunk]] = []
        self._holders: dict[int, list[int]] = {}  # a phrase -> the kept hits that hold it

    def __len__(self) -> int:
        return len(self._kept)

    def add(self, hit: Hit, *, keep: bool = True) -> None:
        """Name ``hit`` as another place of the kept hit it repeats, else keep it (unless
        ``keep`` is false: the results are complete, only repeats are still named)."""
        mine = phrases(hit.chunk.text)
        # Only kept hits that share a phrase are compared, by the count shared, in rank order.
        shared = Counter(i for p in mine.found for i in self._holders.get(p, ()))
        for i in sorted(shared):
            if repeats(mine, self._phrases[i], shared[i]) and not neighbours(
                hit.chunk, self._kept[i].chunk
            ):
                self._others[i].append(hit.chunk)
                return
        if not keep:
            return
        for p in mine.found:
            self._holders.setdefault(p, []).append(len(self._kept))
        self._kept.append(hit)
        self._phrases.append(mine)
        self._others.append([])

    def hits(self) -> list[Hit]:
        """The kept hits in rank order, each with the other places of its passage."""
        return [
            replace(hit, repeats=len(others), elsewhere=tuple(others[:SHOWN])) if others else hit
            for hit, others in zip(self._kept, self._others, strict=True)
        ]


def place(c: StoredChunk) -> str:
    """Where a passage is, in a few words: ``guide.pdf page 3``, ``notes.md lines 4–9``."""
    if c.locator:
        return f"{c.path} {c.locator}"
    if c.page is not None:
        return f"{c.path} page {c.page}"
    if c.line_start is not None:
        return f"{c.path} lines {c.line_start}–{c.line_end}"
    return c.path
