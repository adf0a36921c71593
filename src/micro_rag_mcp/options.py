"""The command-line options the server and ``micro-rag`` share.

The store flags, the suffixes and groups of ``--exts``, the ``--exclude`` patterns and
the folders: each is checked into a value, or refused in one line (exit status 2).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from micro_rag_mcp.core.address import StoreConfig, parse_shard, parse_store_url
from micro_rag_mcp.core.errors import ConfigError
from micro_rag_mcp.core.formats import install_hint, missing_extra
from micro_rag_mcp.core.settings import (
    EXT_GROUPS,
)
from micro_rag_mcp.ingest.ignore import parse_rules


class OneLineParser(argparse.ArgumentParser):
    """Bad input is one line on stderr and exit status 2, not the usage and a line."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_store_arguments(p: argparse.ArgumentParser) -> None:
    """The flags that select a shared store instead of the index folder."""
    p.add_argument(
        "--store",
        metavar="URL",
        help="Keep the index in a Milvus database shared by many processes, "
        "milvus://HOST:PORT/DB?collection=NAME, instead of the index folder.",
    )
    p.add_argument(
        "--store-token-env",
        metavar="NAME",
        help="Environment variable holding the store's token (user:password or API key).",
    )


def store_from_args(args: argparse.Namespace, shard: str | None = None) -> StoreConfig | None:
    """The store the flags name (None: the index folder), its token read from the
    environment variable they name."""
    if args.store is None:
        if args.store_token_env is not None:
            raise ConfigError("--store-token-env applies only with --store")
        return None
    token = ""
    if args.store_token_env is not None:
        token = os.environ.get(args.store_token_env, "")
        if not token:
            raise ConfigError(f"--store-token-env: the variable {args.store_token_env} is not set")
    config = parse_store_url(args.store, token)
    return replace(config, shard=parse_shard(shard)) if shard is not None else config


SUPPORTED_EXTS = frozenset(ext for group in EXT_GROUPS.values() for ext in group)


def parse_exts(value: str) -> tuple[str, ...]:
    """Suffixes (``.md`` or ``md``) and group names (``docs``, ``code``), in order, once each."""
    exts: list[str] = []
    for raw in value.split(","):
        item = raw.strip().lower()
        if not item:
            continue
        if item in EXT_GROUPS:
            exts.extend(ext for ext in EXT_GROUPS[item] if ext not in exts)
            continue
        ext = item if item.startswith(".") else f".{item}"
        if ext not in SUPPORTED_EXTS and (extra := missing_extra(ext)):
            raise ConfigError(
                f"--exts: {ext} is read only with the {extra} extra: {install_hint(extra)}"
            )
        if ext not in SUPPORTED_EXTS:
            groups = ", ".join(EXT_GROUPS)
            supported = ", ".join(sorted(SUPPORTED_EXTS))
            raise ConfigError(
                f"--exts: unsupported extension {raw.strip()!r} (groups: {groups}; "
                f"extensions: {supported})"
            )
        if ext not in exts:
            exts.append(ext)
    if not exts:
        raise ConfigError("--exts: no extension given")
    return tuple(exts)


def parse_excludes(values: Sequence[str]) -> tuple[str, ...]:
    """The ``--exclude`` patterns, each checked to be one usable .gitignore line."""
    patterns: list[str] = []
    for value in values:
        pattern = value.strip()
        if not pattern or "\n" in pattern or pattern.startswith("#"):
            raise ConfigError(f"--exclude {value!r}: give one pattern, such as 'drafts/'")
        if not parse_rules([pattern]):
            raise ConfigError(f"--exclude {value!r}: not a usable pattern")
        patterns.append(pattern)
    return tuple(patterns)


def check_folders(data_arg: str, index_arg: str | None, name: str) -> tuple[Path, Path]:
    """The data folder (it must exist and be readable) and the index folder (by default
    ``<data>/index``; if it exists it must be a folder), resolved. Nothing is created."""
    data = Path(data_arg).expanduser()
    if data.exists() and not data.is_dir():
        raise ConfigError(f"{name} {data}: a file, not a folder (give the folder that holds it)")
    if not data.is_dir():
        raise ConfigError(f"{name} {data}: not an existing folder")
    if not os.access(data, os.R_OK | os.X_OK):
        raise ConfigError(f"{name} {data}: not readable")
    data = data.resolve()
    index = Path(index_arg).expanduser().resolve() if index_arg else data / "index"
    if index.exists() and not index.is_dir():
        raise ConfigError(f"--index-folder {index}: not a folder")
    return data, index
