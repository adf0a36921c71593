"""e5's 250,002 SentencePiece pieces, found by their text without a string for each.

A dict of the pieces held 39 MB (a string and an int object each). Here they are filed
under a key made of their ``hash`` and their length, in a table of 2^19 slots (the key,
the id), with the pieces' text end to end to confirm a match: 12 MB. A tokenizer asks for
many texts at a time (every substring of a few dozen words), so the table is probed for
all of them at once. The length is in the key because ``hash`` reads a string's stored
bytes: ``"pu"`` (two bytes of Latin-1) and ``"異"`` (U+7570, two bytes of UCS-2) hash
alike, 485 pairs of e5's pieces among them.

Python salts ``hash`` in each process: an index serves the process that built it only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from micro_rag_mcp.model.packed_e5 import E5Vocabulary

if TYPE_CHECKING:
    import numpy.typing as npt

_MIX = np.uint64(0x9E3779B97F4A7C15)  # spreads a length over the key's bits


def keys_of(hashes: npt.NDArray[Any], lengths: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """The key of texts with these ``hash`` values and lengths."""
    with np.errstate(over="ignore"):
        mixed: npt.NDArray[np.uint64] = hashes.astype(np.uint64) ^ (
            lengths.astype(np.uint64) * _MIX
        )
    return mixed


class PieceIndex:
    """Each piece's id by its text, every piece but one (e5's ``<unk>``, never matched)."""

    def __init__(
        self, vocabulary: E5Vocabulary, leave_out: int, key: Callable[[str], int] = hash
    ) -> None:
        """``key``: the hash a text is filed under (a test gives one that collides)."""
        self._key = key
        hashes = np.empty(len(vocabulary), dtype=np.int64)
        lengths = np.empty(len(vocabulary), dtype=np.int64)
        for i, piece in enumerate(vocabulary.pieces()):
            hashes[i], lengths[i] = key(piece), len(piece)
        self.longest = int(lengths.max())  # the longest piece's characters
        keys = keys_of(hashes, lengths)
        self._slots, self._ids = _table(keys, leave_out)
        self._mask = np.uint64(len(self._slots) - 1)
        self._text = vocabulary.text.decode("utf-8")
        self._offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        # pieces under one key: none of e5's in practice, but a match must be exact
        self._shared: dict[int, list[int]] = {}
        kept = np.delete(keys, leave_out) if 0 <= leave_out < len(keys) else keys
        values, counts = np.unique(kept, return_counts=True)
        for both in values[counts > 1].tolist():
            self._shared[both] = [
                i for i in np.flatnonzero(keys == both).tolist() if i != leave_out
            ]

    def find(self, texts: list[str], lengths: npt.NDArray[Any]) -> tuple[Any, Any]:
        """Which of ``texts`` (of ``lengths``) are pieces, and which: ``texts[k]`` is piece
        ``ids[j]`` for the ``j``-th ``k`` of ``ks``; as ``(ks, ids)``, ``ks`` rising."""
        if not texts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
        hashes = np.fromiter(map(self._key, texts), dtype=np.int64, count=len(texts))
        keys = keys_of(hashes, lengths)
        ids = np.full(len(keys), -1, dtype=np.int32)
        slots = keys & self._mask
        pending = np.arange(len(keys))
        while len(pending):  # open addressing: the next slot while one holds another key
            at = slots[pending]
            there = self._ids[at]
            same = (self._slots[at] == keys[pending]) & (there >= 0)
            ids[pending[same]] = there[same]
            pending = pending[~same & (there >= 0)]
            slots[pending] = (slots[pending] + 1) & self._mask
        ks = np.flatnonzero(ids >= 0)
        ids = ids[ks]
        if self._shared:  # some keys are more than one piece's: the one the text is
            for j, k in enumerate(ks.tolist()):
                ids[j] = self._which(texts[k], self._shared.get(int(keys[k]), [int(ids[j])]))
        else:
            starts, ends = self._offsets[ids], self._offsets[ids.astype(np.int64) + 1]
            text = self._text
            rows = zip(ks.tolist(), starts.tolist(), ends.tolist(), strict=True)
            ids[[j for j, (k, a, b) in enumerate(rows) if text[a:b] != texts[k]]] = -1
        kept = ids >= 0
        return ks[kept], ids[kept]

    def _which(self, text: str, ids: list[int]) -> int:
        """The id in ``ids`` whose piece ``text`` is (one listed twice: its last), or -1."""
        return next((i for i in reversed(ids) if self._piece(i) == text), -1)

    def _piece(self, i: int) -> str:
        return self._text[self._offsets[i] : self._offsets[i + 1]]


def _table(keys: npt.NDArray[np.uint64], leave_out: int) -> tuple[Any, Any]:
    """An open-addressing table of ``keys`` at least half empty: each key in the first
    free slot from ``key & mask`` on, its id beside it (-1: a free slot)."""
    size = 1 << max(1, int(2 * len(keys)).bit_length())
    mask = np.uint64(size - 1)
    slots = np.zeros(size, dtype=np.uint64)
    ids = np.full(size, -1, dtype=np.int32)
    pending = np.array([i for i in range(len(keys)) if i != leave_out], dtype=np.int64)
    at = keys[pending] & mask
    while len(pending):
        free = ids[at] < 0
        first = np.unique(at[free], return_index=True)[1]  # one key a free slot a round
        placed = np.flatnonzero(free)[first]
        slots[at[placed]], ids[at[placed]] = keys[pending[placed]], pending[placed]
        rest = np.ones(len(pending), dtype=bool)
        rest[placed] = False
        pending, at = pending[rest], at[rest]
        at[ids[at] >= 0] = (at[ids[at] >= 0] + np.uint64(1)) & mask
    return slots, ids
