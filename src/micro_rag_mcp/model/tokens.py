"""The tokens an encoder's graph takes, as the embedder and the tokenizers' loader share
them (a module of its own, so the loader need not import the embedder back)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class Encoding(Protocol):
    """One text's tokens as the graph takes them (``TokenIds`` is one)."""

    @property
    def ids(self) -> list[int]: ...

    @property
    def attention_mask(self) -> list[int]: ...

    @property
    def type_ids(self) -> list[int]: ...


class TokenizesBatches(Protocol):
    """A tokenizer as the embedder uses it (``bert_tokenizer.BertTokenizer`` is one)."""

    def encode_batch(self, texts: Sequence[str]) -> Sequence[Encoding]: ...

    def forget(self) -> None:
        """Drop the words' pieces kept for the next texts (for when it is idle)."""


@dataclass(frozen=True, slots=True)
class TokenIds:
    """A text's token ids, with the mask and types the graph takes (one text, no pair)."""

    ids: list[int]

    @property
    def attention_mask(self) -> list[int]:
        return [1] * len(self.ids)

    @property
    def type_ids(self) -> list[int]:
        return [0] * len(self.ids)
