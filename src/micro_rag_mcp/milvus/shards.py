"""Which share of a folder each worker of a shared store indexes: a path's shard key."""

from __future__ import annotations

import hashlib

SHARD_SPAN = 1 << 62  # shard keys run from 0 to this (an INT64 field holds them)


def shard_key(path: str) -> int:
    """A relative path's stable place in ``[0, SHARD_SPAN)``: a hash of the path, so
    every worker and every run agrees on its owner without talking to each other."""
    digest = hashlib.sha1(path.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") >> 2


def shard_range(shard: tuple[int, int]) -> tuple[int, int]:
    """The shard keys share ``(I, N)`` owns: the I-th of N equal ranges, low end included.

    A range rather than a remainder, so a store can select a share with one comparison
    on an indexed field (milvus-lite's filters have no ``%``).
    """
    i, n = shard
    return (i - 1) * SHARD_SPAN // n, i * SHARD_SPAN // n


def in_shard(path: str, shard: tuple[int, int] | None) -> bool:
    """Whether a relative path belongs to ``shard`` (None: the whole folder)."""
    if shard is None:
        return True
    low, high = shard_range(shard)
    return low <= shard_key(path) < high
