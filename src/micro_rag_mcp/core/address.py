"""Where a shared store is, as the flags name it: its address, its token, this worker's shard."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from micro_rag_mcp.core.errors import ConfigError

STORE_FORMAT = "milvus://HOST:PORT/DB?collection=NAME"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,200}")


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
