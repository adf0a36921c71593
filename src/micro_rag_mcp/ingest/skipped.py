"""What a scan of the data folder leaves out, and why, kept so that ``status`` can say it.

A scan passes over entries no reader may open: a symlink whose target lies outside the
folder, a symlink to nothing, a FIFO, device or socket, a name that is not valid UTF-8.
Each pass records what it passed over in the catalog (``record``), so a server and
``micro-rag status`` in another process tell the same thing; a pass over part of the
folder replaces only the entries of its part. An entry is logged once, by the pass that
first finds it skipped, not by every pass after it (a folder polled every few seconds
would repeat it forever).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from micro_rag_mcp.core.records import REASONS, Skip, SkipGroup

logger = logging.getLogger(__name__)

EXAMPLES = 5  # paths shown per reason
RECORDED = 1000  # entries kept in the catalog; beyond that they are only counted
LOGGED = 5  # entries newly skipped that a pass logs one by one
META_KEY = "skipped"


def shown_name(rel: str) -> str:
    """A path as it can be shown and stored: bytes that are not UTF-8 as ``\\xff``."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


class Meta(Protocol):
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...


class MemoryMeta:
    """Where a store that keeps no catalog of its own (Milvus) holds the record: this
    process's passes only."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}

    def get_meta(self, key: str) -> str | None:
        return self._values.get(key)

    def set_meta(self, key: str, value: str) -> None:
        self._values[key] = value


class InScope(Protocol):
    def matches(self, rel: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class _Record:
    entries: tuple[Skip, ...]
    more: dict[str, int]  # entries beyond ``RECORDED``, per reason

    def groups(self) -> tuple[SkipGroup, ...]:
        out = []
        for reason in REASONS:
            paths = sorted(e.rel for e in self.entries if e.reason == reason)
            count = len(paths) + self.more.get(reason, 0)
            if count:
                out.append(SkipGroup(reason, count, tuple(paths[:EXAMPLES])))
        return tuple(out)


def _load(meta: Meta) -> _Record:
    raw = meta.get_meta(META_KEY)
    if not raw:
        return _Record((), {})
    try:
        data = json.loads(raw)
        entries = tuple(Skip(str(rel), reason) for rel, reason in data["entries"])
        more = {str(k): int(v) for k, v in data["more"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        logger.warning("the record of skipped entries is unreadable; it is made again")
        return _Record((), {})
    return _Record(tuple(e for e in entries if e.reason in REASONS), more)


def recorded(meta: Meta) -> tuple[SkipGroup, ...]:
    """What the passes so far skipped, by reason."""
    return _load(meta).groups()


def record(meta: Meta, found: Iterable[Skip], scope: InScope | None) -> None:
    """Record what a pass over ``scope`` (None: the whole folder) skipped, and log the
    entries no earlier pass had skipped."""
    old = _load(meta)
    seen = sorted(set(found), key=lambda e: (e.rel, e.reason))
    kept = [] if scope is None else [e for e in old.entries if not scope.matches(e.rel)]
    entries = kept + seen
    more: dict[str, int] = {} if scope is None else dict(old.more)
    for e in entries[RECORDED:]:
        more[e.reason] = more.get(e.reason, 0) + 1
    new = _Record(tuple(entries[:RECORDED]), more)
    before = set(old.entries)
    fresh = [e for e in seen if e not in before]
    for e in fresh[:LOGGED]:
        logger.warning("skipping %s: %s", e.rel, e.reason)
    if len(fresh) > LOGGED:
        logger.warning("skipping %d more entries (see status)", len(fresh) - LOGGED)
    if new != old:
        meta.set_meta(
            META_KEY,
            json.dumps({"entries": [[e.rel, e.reason] for e in new.entries], "more": more}),
        )
