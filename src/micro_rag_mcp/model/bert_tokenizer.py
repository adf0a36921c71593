"""MiniLM's tokenizer: BERT's uncased WordPiece, in Python, token for token as ``tokenizers``.

all-MiniLM-L6-v2's ``tokenizer.json`` asks the ``tokenizers`` library for four steps,
done the same here so that the install need not carry that library (12 MB, and 30 more of
``huggingface_hub`` it pulls in):

1. the special tokens (``[CLS]``, ``[MASK]``, …) written in the text are kept whole;
2. ``BertNormalizer``: controls dropped, whitespace made a space, Chinese characters
   spaced out, accents stripped, lowercase. Each character is changed on its own, by
   the Rust standard library's Unicode tables, which are not Python's: so the changes
   are read from ``minilm/chars.json``, taken from ``tokenizers`` itself by
   ``scripts/make_bert_chars.py``;
3. ``BertPreTokenizer``: words split at whitespace, each punctuation mark a word;
4. ``WordPiece``: each word as the longest pieces of the vocabulary, left to right
   (``##`` before a piece inside a word), ``[UNK]`` for a word of over 100 characters or
   one the pieces cannot spell; then ``[CLS]`` and ``[SEP]`` around them, at most
   ``max_length`` tokens in all.

``tests/test_bert_tokenizer.py`` compares the two on text of every Unicode block.
Tokenizing takes a small share of the time to embed (``bench/tokenizer_speed.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from micro_rag_mcp.model.tokens import TokenIds

HANGUL = range(0xAC00, 0xD7A4)
_MAX_WORD = 100  # characters; a longer word is [UNK]
_PREFIX = "##"
_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_WORD_CACHE = 1 << 16


def hangul_jamo(point: int) -> str:
    """A Hangul syllable's canonical decomposition (Unicode 3.12): its jamo."""
    lead, rest = divmod(point - HANGUL.start, 21 * 28)
    vowel, tail = divmod(rest, 28)
    jamo = chr(0x1100 + lead) + chr(0x1161 + vowel)
    return jamo + chr(0x11A7 + tail) if tail else jamo


def _char_class(runs: Sequence[tuple[int, int]]) -> str:
    """A regular expression's character class body for ``[first, last]`` runs."""
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in runs
    )


Runs = list[tuple[int, int]]


@dataclass(frozen=True)
class BertChars:
    """What the normalizer and the pre-tokenizer do to each character (``chars.json``)."""

    deleted: Runs
    spaced: Runs
    mapped: dict[int, str]
    punctuation: Runs
    whitespace: Runs

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> BertChars:
        def runs(key: str) -> Runs:
            return [(int(a), int(b)) for a, b in raw[key]]

        mapped = {int(point): str(out) for point, out in raw["mapped"].items()}
        first, last = raw["hangul"]
        if (first, last + 1) != (HANGUL.start, HANGUL.stop):
            raise ValueError(f"chars.json's Hangul syllables are {first}-{last}")
        mapped.update((point, hangul_jamo(point)) for point in HANGUL)
        return cls(runs("deleted"), runs("spaced"), mapped, runs("punctuation"), runs("whitespace"))


class BertTokenizer:
    """``encode_batch`` as the embedder calls it; thread-safe."""

    def __init__(self, vocab: dict[str, int], chars: BertChars, max_length: int) -> None:
        self._vocab = vocab
        self._longest = max(len(piece) for piece in vocab)
        self._unk, self._cls, self._sep = vocab["[UNK]"], vocab["[CLS]"], vocab["[SEP]"]
        self._content = max_length - 2
        self._table = chars.mapped
        self._ascii: dict[int, str | None] = {p: o for p, o in chars.mapped.items() if p < 128}
        self._ascii.update((p, None) for a, b in chars.deleted for p in range(a, min(b + 1, 128)))
        self._deleted = re.compile(f"[{_char_class(chars.deleted)}]")
        self._spaced = re.compile(f"[{_char_class(chars.spaced)}]")
        punctuation, space = _char_class(chars.punctuation), _char_class(chars.whitespace)
        self._words = re.compile(f"[{punctuation}]|[^{punctuation}{space}]+")
        specials = "|".join(re.escape(token) for token in _SPECIAL if token in vocab)
        self._specials = re.compile(f"({specials})")
        self._pieces = lru_cache(maxsize=_WORD_CACHE)(self._wordpiece)

    @classmethod
    def from_files(cls, tokenizer_json: Path, chars_json: Path, max_length: int) -> BertTokenizer:
        """The vocabulary of a ``tokenizer.json`` and the tables of ``chars.json``."""
        model = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]
        chars = BertChars.from_json(json.loads(chars_json.read_text(encoding="utf-8")))
        return cls(model["vocab"], chars, max_length)

    def forget(self) -> None:
        """Drop the cached pieces of the words seen (up to 65,536 words)."""
        self._pieces.cache_clear()

    def normalize(self, text: str) -> str:
        """``BertNormalizer``'s text: each character changed as ``chars.json`` says."""
        if text.isascii():
            return text.translate(self._ascii)
        text = self._deleted.sub("", text)
        return self._spaced.sub(r" \g<0> ", text).translate(self._table)

    def encode(self, text: str) -> TokenIds:
        """The text's tokens between ``[CLS]`` and ``[SEP]``, cut at the maximum length."""
        ids: list[int] = []
        pieces = self._pieces
        parts = self._specials.split(text) if "[" in text else [text]
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(self._vocab[part])
            else:
                # Each word is one piece at least: past the first ``content`` none is kept.
                for word in self._words.findall(self.normalize(part))[: self._content]:
                    ids += pieces(word)
            if len(ids) >= self._content:
                break
        return TokenIds([self._cls, *ids[: self._content], self._sep])

    def encode_batch(self, texts: Sequence[str]) -> list[TokenIds]:
        return [self.encode(text) for text in texts]

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        """The longest vocabulary pieces that spell ``word``, left to right."""
        vocab = self._vocab
        if word in vocab:
            return (vocab[word],)
        if len(word) > _MAX_WORD:
            return (self._unk,)
        out, start = [], 0
        while start < len(word):
            prefix = _PREFIX if start else ""
            end = min(len(word), start + self._longest)
            while end > start and prefix + word[start:end] not in vocab:
                end -= 1
            if end == start:
                return (self._unk,)
            out.append(vocab[prefix + word[start:end]])
            start = end
        return tuple(out)
