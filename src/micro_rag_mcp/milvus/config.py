"""Where a Milvus store is, and which share of a folder each worker indexes (its shard)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from micro_rag_mcp.core.errors import ConfigError

STORE_FORMAT = "milvus://HOST:PORT/DB?collection=NAME"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,200}")
SHARD_SPAN = 1 << 62  # shard keys run from 0 to this (an INT64 field holds them)


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Where a Milvus store is, and which share of the folder this process indexes."""

    host: str
    port: int
    database: str
    collection: str
    token: str = field(default="", repr=False)  # never logged, never on a command line
    shard: tuple[int, int] | None = None  # (i, n): this process indexes share i of n, 1-based

    @property
    def url(self) -> str:
        """The address as the user wrote it (without the token)."""
        return f"milvus://{self.host}:{self.port}/{self.database}?collection={self.collection}"

    @property
    def uri(self) -> str:
        return f"http://{self.host}:{self.port}"


def parse_store_url(text: str, token: str = "") -> StoreConfig:
    """``milvus://HOST:PORT/DB?collection=NAME`` as a StoreConfig, or ConfigError."""
    wrong = f"--store must look like {STORE_FORMAT} (got {text!r})"
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(wrong) from None
    if parts.scheme != "milvus" or not parts.hostname or port is None or parts.username:
        raise ConfigError(wrong)
    database = parts.path.strip("/") or "default"
    names = parse_qs(parts.query).get("collection", [])
    if len(names) != 1 or set(parse_qs(parts.query)) != {"collection"}:
        raise ConfigError(wrong)
    for what, name in (("database", database), ("collection", names[0])):
        if not _NAME.fullmatch(name):
            raise ConfigError(
                f"--store: the {what} name {name!r} must be letters, digits and underscores, "
                "starting with a letter or underscore"
            )
    return StoreConfig(parts.hostname, port, database, names[0], token)


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (1 <= I <= N) as ``(I, N)``, or ConfigError."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if m is None or not 1 <= int(m[1]) <= int(m[2]):
        raise ConfigError(f"--shard must be I/N with 1 <= I <= N, e.g. 1/4 (got {text!r})")
    return int(m[1]), int(m[2])


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
