"""The store seam: what the server and ``micro-rag`` need of an index, and which one to open.

Two implementations stand behind ``Store``: ``engine.Engine``, the embedded SQLite +
FAISS index in the index folder (the default), and ``milvus_engine.MilvusEngine``, the
same tools over a Milvus database that many workers and servers share. Both call the
same extraction (``indexer``), fusion (``search.fuse``) and reading (``reading``) code,
so a result means the same thing on either.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol
from urllib.parse import parse_qs, urlsplit

from micro_rag_mcp.core.errors import ConfigError
from micro_rag_mcp.core.results import (
    IndexState,
    IndexSummary,
    ProgressFn,
    ReindexReport,
    SearchOutcome,
    TextPassage,
)
from micro_rag_mcp.search.reading import DEFAULT_MAX_CHARS

if TYPE_CHECKING:
    from pathlib import Path

    from micro_rag_mcp.core.listing import FileListing
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.local.search import SearchParams
    from micro_rag_mcp.model.embedder import Embedder
    from micro_rag_mcp.search.scope import SearchScope

STORE_FORMAT = "milvus://HOST:PORT/DB?collection=NAME"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,200}")


class Store(Protocol):
    """An index the tools serve: search it, bring it in line with the folder, read from it."""

    def start(self) -> None: ...
    def stop(self, timeout: float = 60.0) -> None: ...
    def load_model(self, timeout: float = 300.0) -> None: ...
    def search(
        self,
        query: str,
        top_k: int = 5,
        score_threshold: float = 0.2,
        scope: SearchScope | None = None,
    ) -> SearchOutcome: ...
    def reindex(
        self,
        *,
        force: bool = False,
        path_glob: str | None = None,
        progress: ProgressFn | None = None,
    ) -> ReindexReport: ...
    def read(
        self,
        path: str,
        *,
        char_start: int | None = None,
        char_end: int | None = None,
        page: int | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        anchor: str | None = None,
    ) -> TextPassage: ...
    def state(self) -> IndexState: ...
    def status(self) -> IndexSummary: ...
    def listing(self) -> FileListing: ...


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


def open_store(
    settings: Settings,
    load_embedder: Callable[[], Embedder],
    config: StoreConfig | None = None,
    *,
    folder: Path | None = None,
    params: SearchParams | None = None,
) -> Store:
    """The embedded index of ``settings`` (no ``config``) or the Milvus store ``config``
    names, indexing ``folder`` (None: a store that only searches and reads), ranking by
    ``params`` (None: the defaults)."""
    if config is None:
        from micro_rag_mcp.local.engine import Engine

        return Engine(settings, load_embedder, params=params)
    from micro_rag_mcp.milvus.engine import MilvusEngine

    return MilvusEngine(settings, load_embedder, config, folder=folder, params=params)
