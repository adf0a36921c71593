"""Items cut into runs of at most ``n``: the one batching every store's requests use."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


def batched(items: Sequence[T], n: int) -> Iterator[Sequence[T]]:
    """``items`` in runs of ``n`` (the last may be shorter), in order."""
    for i in range(0, len(items), n):
        yield items[i : i + n]
