"""Finding the documents of a data folder, and the glob that limits a reindex."""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from micro_rag_mcp.core.errors import InvalidArgument
from micro_rag_mcp.core.records import Skip, SkipReason
from micro_rag_mcp.ingest.ignore import Rule, glob_regex, ignored, parse_rules, read_rule_files
from micro_rag_mcp.ingest.skipped import shown_name

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ScannedFile:
    rel: str  # relative to the data folder, "/" separators
    where: str  # the path to open (a ``Path`` is made only for the files that are read)
    size: int
    mtime_ns: int

    @property
    def path(self) -> Path:
        return Path(self.where)


@dataclass(frozen=True, slots=True)
class ScanResult:
    files: list[ScannedFile]
    unlisted: list[str]  # folders (relative, "" for the root) that could not be listed
    skipped: list[Skip] = field(default_factory=list)  # in scope, left out (see ``skipped``)
    why: dict[str, str] = field(default_factory=dict)  # unlisted folder -> the system's reason

    def may_hold(self, rel: str) -> bool:
        """Whether ``rel`` could exist unseen, inside a folder that could not be listed."""
        return any(rel.startswith(prefix) for prefix in self.unlisted)


@dataclass(frozen=True, slots=True)
class ScanRules:
    root: Path
    exts: tuple[str, ...]
    exclude: tuple[Path, ...]  # real paths never entered (the index folder)
    skip_dirs: frozenset[str]
    ignore: tuple[str, ...] = ()  # .gitignore-style patterns that always apply (--exclude)
    ignore_files: bool = True  # honour .gitignore and .ignore files in the folder


class Scope(Protocol):
    """Which paths (relative to the data folder) a reindex looks at."""

    def matches(self, rel: str) -> bool: ...

    def enters(self, folder: str) -> bool:
        """Whether files in scope may lie under ``folder`` (relative, no trailing slash):
        a scan does not list a folder that cannot hold any."""
        ...


def scan(rules: ScanRules, scope: Scope | None = None) -> ScanResult:
    """Every indexable regular file under the root, and the folders that could not be listed.

    Hidden entries, ``skip_dirs``, virtual environments (a folder with ``pyvenv.cfg``),
    the excluded folders and what ``.gitignore``/``.ignore`` files or the ``ignore``
    patterns leave out are never entered (see ``ignore.py``). Symlinked
    folders are not followed (no loops, nothing outside the root); a symlinked file is
    taken only if its real path lies inside the root. Iterative, so depth is no limit.
    A folder that cannot be listed (permissions, an I/O error, an unmounted share) is
    reported, so that the files indexed from it are not taken for deleted. What is left
    out although it is in scope and of an indexed type (a symlink out of the root or to
    nothing, a FIFO or device, a name that is not UTF-8) is reported too, for ``status``.
    """
    unlisted: list[str] = []
    skipped: list[Skip] = []
    why: dict[str, str] = {}
    files = list(_walk(rules, scope, unlisted, skipped, why))
    return ScanResult(files, unlisted, skipped, why)


def _walk(
    rules: ScanRules,
    scope: Scope | None,
    unlisted: list[str],
    skipped: list[Skip],
    why: dict[str, str],
) -> Iterator[ScannedFile]:
    root = Path(os.path.realpath(rules.root))
    exclude = {os.path.realpath(p) for p in rules.exclude}
    always = parse_rules(rules.ignore)
    stack: list[tuple[str, str, list[Rule]]] = [(str(root), "", [])]
    while stack:
        folder, prefix, inherited = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name, reverse=True)
        except OSError as e:
            logger.warning("cannot list %s: %s", folder, e.strerror or e)
            unlisted.append(prefix)
            why[prefix] = e.strerror or str(e)
            continue
        local = inherited
        if rules.ignore_files:
            local = inherited + read_rule_files(Path(folder), prefix)

        def left_out(rel: str, is_dir: bool, local: list[Rule] = local) -> bool:
            # --exclude wins over the folder's own rules, even over their "!pattern"
            return bool(always and ignored(always, rel, is_dir)) or bool(
                local and ignored(local, rel, is_dir)
            )

        def skip(rel: str, reason: SkipReason) -> None:
            skipped.append(Skip(shown_name(rel), reason))
            logger.debug("skipping %s: %s", shown_name(rel), reason)

        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            rel = f"{prefix}{name}"
            if entry.is_dir(follow_symlinks=False):
                if (
                    name not in rules.skip_dirs
                    and (scope is None or scope.enters(rel))
                    and os.path.realpath(entry.path) not in exclude
                    and not left_out(rel, True)
                    and not os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))
                ):
                    if _encodable(name):
                        stack.append((entry.path, rel + "/", local))
                    else:
                        skip(rel, "name not valid UTF-8")
                continue
            dot = name.rfind(".")  # the extension, as splitext finds it (no leading dot here)
            if dot <= 0 or name[dot:].lower() not in rules.exts:
                continue
            if scope is not None and not scope.matches(rel):
                continue
            if left_out(rel, False):
                continue
            if not _encodable(name):
                skip(rel, "name not valid UTF-8")
                continue
            found = _regular_file(entry, root, rel)
            if isinstance(found, ScannedFile):
                yield found
            elif found is not None:
                skip(rel, found)


def _encodable(name: str) -> bool:
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _regular_file(entry: os.DirEntry[str], root: Path, rel: str) -> ScannedFile | SkipReason | None:
    """The file, or why it is skipped; None for an entry that cannot be looked at."""
    try:
        if entry.is_symlink():
            real = Path(os.path.realpath(entry.path))
            if not real.is_relative_to(root):
                return "symlink outside the folder"
        st = os.stat(entry.path)  # follows a symlink whose target we just checked
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ELOOP) and entry.is_symlink():
            return "broken symlink"  # to nothing, or to itself
        logger.warning("skipping %s: %s", rel, e.strerror or e)
        return None
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    return ScannedFile(rel, entry.path, st.st_size, st.st_mtime_ns)


UNCLOSED_CLASS = ' (a "[" without a closing "]" matches itself)'


def unclosed_class(pattern: str) -> bool:
    """Whether a part of the glob opens a ``[`` class it never closes: the ``[`` is then
    taken as itself, which its writer seldom means."""
    parts = pattern.replace("\\", "/").split("/")
    return any((at := part.rfind("[")) != -1 and "]" not in part[at + 1 :] for part in parts)


class PathGlob:
    """A glob over paths relative to the data folder.

    ``*`` and ``?`` stay within one folder, ``**`` spans folders, ``[abc]`` is a class.
    A pattern that names a folder takes everything under it. Patterns that could leave
    the data folder (absolute, ``..``, ``~``) are refused.
    """

    def __init__(self, pattern: str, name: str = "path_glob") -> None:
        """``name``: what the caller called the pattern (``--glob`` on a command line)."""
        self.pattern = pattern
        norm = pattern.strip().replace("\\", "/")
        if not norm:
            raise InvalidArgument(f"{name} must not be empty")
        if "\x00" in norm:
            raise InvalidArgument(f"{name} must not contain NUL characters")
        if norm.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", norm):
            raise InvalidArgument(
                f"{name} {pattern!r} is absolute; give a pattern relative to the data folder"
            )
        parts = [p for p in norm.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise InvalidArgument(f"{name} {pattern!r} would leave the data folder ('..')")
        if not parts:
            raise InvalidArgument(f"{name} {pattern!r} names no files")
        body = glob_regex(parts, gitignore=False)
        try:
            self._regex = re.compile(f"(?s:{body})(?:/.*)?\\Z")
        except re.error as e:
            raise InvalidArgument(f"{name} {pattern!r} is not a valid pattern: {e}") from e

    def matches(self, rel: str) -> bool:
        return self._regex.match(rel) is not None

    def enters(self, folder: str) -> bool:
        return True  # a pattern's "**" can reach below any folder


class PathSet:
    """Exactly the given paths, relative to the data folder; a folder among them takes
    everything under it. Paths that could leave the data folder are refused."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths: frozenset[str] = frozenset(_relative(p) for p in paths)

    def matches(self, rel: str) -> bool:
        parts = rel.split("/")
        return any("/".join(parts[:n]) in self.paths for n in range(1, len(parts) + 1))

    def enters(self, folder: str) -> bool:
        inside = folder + "/"
        return self.matches(folder) or any(p.startswith(inside) for p in self.paths)


def _relative(path: str) -> str:
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if path.startswith("/") or "\x00" in path or ".." in parts or not parts:
        raise InvalidArgument(f"{path!r} is not a path inside the data folder")
    return "/".join(parts)
