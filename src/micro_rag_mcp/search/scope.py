"""A search's scope: which indexed files its passages may come from.

A scope is parsed once from what a caller wrote (path globs, a modification-time range,
file types) and then resolved against the catalog into the ids of the files and chunks
it takes. Both channels gather their candidates from those ids only, before anything is
ranked, so ``top_k`` passages still come back when the scope holds that many; filtering
a whole-folder result afterwards would lose every passage that fell below ``top_k``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Protocol

from micro_rag_mcp.core.errors import InvalidArgument
from micro_rag_mcp.core.settings import EXT_GROUPS
from micro_rag_mcp.core.shown import shown
from micro_rag_mcp.ingest.scanner import UNCLOSED_CLASS, PathGlob, unclosed_class

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

KNOWN_EXTS = frozenset(ext for group in EXT_GROUPS.values() for ext in group)
# The extended forms only: a date, or a date and a time to the minute, second or a fraction,
# with an optional UTC offset. Python reads more (2024-W01, 20240101, 2024-061), which a
# caller is likelier to have meant otherwise than to have meant that.
_WHEN = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})?)?", re.ASCII
)
WHEN_FORMS = "YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS[.ffffff]] with an optional Z or ±HH:MM"
DATE_EXAMPLE = "2024-03-01 or 2024-03-01T12:00:00Z"


@dataclass(frozen=True, slots=True)
class ScopeNames:
    """What the caller calls the four parts of a scope, for its notices and refusals
    (the tool's parameters, or the command line's flags)."""

    path_glob: str = "path_glob"
    modified_after: str = "modified_after"
    modified_before: str = "modified_before"
    file_types: str = "file_types"


@dataclass(frozen=True, slots=True)
class SearchScope:
    """The files a search may draw from; an unset part takes every file.

    ``after_ns`` is inclusive and ``before_ns`` exclusive, both in ns since the epoch.
    """

    globs: tuple[PathGlob, ...] = ()
    after_ns: int | None = None
    before_ns: int | None = None
    exts: frozenset[str] | None = None
    names: ScopeNames = field(default=ScopeNames(), compare=False)

    def matches(self, path: str, ext: str, mtime_ns: int) -> bool:
        if self.exts is not None and ext not in self.exts:
            return False
        if self.after_ns is not None and mtime_ns < self.after_ns:
            return False
        if self.before_ns is not None and mtime_ns >= self.before_ns:
            return False
        return not self.globs or any(g.matches(path) for g in self.globs)

    def describe(self) -> str:
        """The scope as a caller wrote it, for a notice."""
        names, parts = self.names, []
        if self.globs:
            parts.append(f"{names.path_glob} " + ", ".join(shown(g.pattern) for g in self.globs))
        if self.after_ns is not None:
            parts.append(f"{names.modified_after} {_when(self.after_ns)}")
        if self.before_ns is not None:
            parts.append(f"{names.modified_before} {_when(self.before_ns)}")
        if self.exts is not None:
            parts.append(f"{names.file_types} " + ", ".join(sorted(self.exts)))
        return " and ".join(parts)


def parse_scope(
    path_glob: str | Sequence[str] | None = None,
    modified_after: str | None = None,
    modified_before: str | None = None,
    file_types: str | Sequence[str] | None = None,
    names: ScopeNames = ScopeNames(),
) -> SearchScope | None:
    """The scope these arguments describe (None when they set none), or ``InvalidArgument``
    with one sentence naming the argument at fault, as ``names`` calls it."""
    patterns = [path_glob] if isinstance(path_glob, str) else list(path_glob or ())
    globs = tuple(PathGlob(p, name=names.path_glob) for p in patterns)
    after = parse_time(names.modified_after, modified_after)
    before = parse_time(names.modified_before, modified_before)
    if after is not None and before is not None and after >= before:
        raise InvalidArgument(
            f"{names.modified_after} ({modified_after}) must be earlier than "
            f"{names.modified_before} ({modified_before})"
        )
    exts = parse_file_types(file_types, names.file_types)
    if not globs and after is None and before is None and exts is None:
        return None
    return SearchScope(globs, after, before, exts, names)


def parse_time(name: str, text: str | None) -> int | None:
    """An ISO 8601 date (its midnight) or date-time in the extended form (``WHEN_FORMS``)
    as ns since the epoch; UTC unless the text names an offset."""
    if text is None:
        return None
    value = text.strip()
    try:
        if not _WHEN.fullmatch(value):
            raise ValueError(value)
        if "T" in value:
            moment = datetime.fromisoformat(value)
        else:
            day = date.fromisoformat(value)
            moment = datetime(day.year, day.month, day.day)
    except ValueError:
        raise InvalidArgument(
            f"{name} must be an ISO 8601 date or date-time, {WHEN_FORMS}, such as "
            f"{DATE_EXAMPLE} (got {shown(text)})"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1_000_000) * 1000


def parse_file_types(
    value: str | Sequence[str] | None, name: str = "file_types"
) -> frozenset[str] | None:
    """Suffixes (``pdf`` or ``.pdf``) and group names (``docs``, ``code``) as a set of
    suffixes; None when none are given."""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    exts: set[str] = set()
    for raw in items:
        item = raw.strip().lower()
        if not item:
            continue
        if item in EXT_GROUPS:
            exts.update(EXT_GROUPS[item])
            continue
        ext = item if item.startswith(".") else f".{item}"
        if ext not in KNOWN_EXTS:
            raise InvalidArgument(
                f"{name}: {shown(raw)} is neither a supported suffix nor a group "
                f"({', '.join(EXT_GROUPS)})"
            )
        exts.add(ext)
    if not exts:
        if items:
            raise InvalidArgument(f"{name} must name at least one suffix or group")
        return None
    return frozenset(exts)


def _when(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat().replace("+00:00", "Z")


class FileRows(Protocol):
    """What resolving a scope needs of a catalog."""

    def file_rows(self) -> list[tuple[int, str, str, int]]: ...
    def chunk_ids_of(self, file_ids: Sequence[int]) -> list[tuple[int, int]]: ...
    def generation(self) -> tuple[str | None, int]: ...


@dataclass(frozen=True, slots=True)
class Resolved:
    """A scope resolved against one catalog: the files it takes and their chunks."""

    scope: SearchScope
    file_ids: tuple[int, ...]
    chunk_ids: npt.NDArray[np.int64]  # sorted
    keys: npt.NDArray[np.int64]  # the vector keys of those chunks, sorted, each once
    whole: bool = False  # every indexed file is in it: the same as no scope

    @property
    def empty(self) -> bool:
        return not self.file_ids

    def notice(self) -> str:
        notice = f"the scope ({self.scope.describe()}) matches no indexed file"
        notice += "; nothing was searched"
        if any(unclosed_class(g.pattern) for g in self.scope.globs):
            notice += UNCLOSED_CLASS
        return notice


def resolve(catalog: FileRows, scope: SearchScope) -> Resolved:
    """The indexed files (status ok) the scope takes, and every chunk of theirs."""
    import numpy as np

    rows = catalog.file_rows()
    ids = tuple(fid for fid, path, ext, mtime in rows if scope.matches(path, ext, mtime))
    if ids and len(ids) == len(rows):  # no need to filter anything
        none = np.empty(0, dtype=np.int64)
        return Resolved(scope, ids, none, none, whole=True)
    pairs = np.asarray(catalog.chunk_ids_of(ids) if ids else [], dtype=np.int64).reshape(-1, 2)
    return Resolved(scope, ids, np.sort(pairs[:, 0]), np.unique(pairs[:, 1]))


class ScopeCache:
    """The last few scopes resolved, for as long as the catalog does not change: an agent
    asks several questions of one scope, and resolving one reads every file's row (11 ms
    at 10,000 files)."""

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._resolved: dict[tuple[object, ...], Resolved] = {}
        self._lock = threading.Lock()

    def resolve(self, catalog: FileRows, scope: SearchScope) -> Resolved | None:
        """The scope resolved, or None when it takes every indexed file (so that a
        search filters nothing)."""
        key = (catalog.generation(), *_key(scope))
        with self._lock:
            found = self._resolved.get(key)
        if found is None:
            found = resolve(catalog, scope)
            with self._lock:
                if len(self._resolved) >= self._size:
                    self._resolved.pop(next(iter(self._resolved)))
                self._resolved[key] = found
        return None if found.whole else Resolved(scope, found.file_ids, found.chunk_ids, found.keys)


def _key(scope: SearchScope) -> tuple[object, ...]:
    globs = tuple(g.pattern for g in scope.globs)
    exts = tuple(sorted(scope.exts)) if scope.exts is not None else None
    return globs, scope.after_ns, scope.before_ns, exts
