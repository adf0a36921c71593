"""Ignore rules in the syntax of ``.gitignore``: the data folder's own and ``--exclude``.

A rule file applies to its folder and everything below it; later rules win over earlier
ones, a deeper file's over a shallower one's, and ``!pattern`` takes a path back in,
except inside a folder that is itself ignored (as in git, such a folder is not entered).
Supported: ``#`` comments, ``!`` negation, a trailing ``/`` for folders only, ``/``
anchoring to the rule file's folder, ``*``, ``?``, ``[abc]`` and ``**``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

IGNORE_FILES = (".gitignore", ".ignore")
MAX_RULE_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern, relative to ``base`` (``""`` or ``"sub/folder/"``)."""

    base: str
    regex: re.Pattern[str]
    negate: bool
    dirs_only: bool

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dirs_only and not is_dir:
            return False
        if not rel.startswith(self.base):
            return False
        return self.regex.fullmatch(rel[len(self.base) :]) is not None


def parse_rules(lines: Iterable[str], base: str = "") -> list[Rule]:
    """The rules of a ``.gitignore``'s lines, for paths under ``base``."""
    rules: list[Rule] = []
    for raw in lines:
        line = raw.rstrip("\n").rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        elif line.startswith("\\"):
            line = line[1:]  # "\#" and "\!" stand for the character itself
        dirs_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = glob_regex(line.split("/"), gitignore=True)
        pattern = body if anchored else f"(?:.*/)?{body}"
        try:
            regex = re.compile(f"(?s:{pattern})")
        except re.error:
            logger.warning("ignoring the unusable ignore pattern %r", raw.strip())
            continue
        rules.append(Rule(base, regex, negate, dirs_only))
    return rules


def read_rule_files(folder: Path, base: str) -> list[Rule]:
    """The rules of ``.gitignore`` and ``.ignore`` in ``folder`` (whose path is ``base``)."""
    rules: list[Rule] = []
    for name in IGNORE_FILES:
        path = folder / name
        try:
            if not path.is_file() or path.stat().st_size > MAX_RULE_FILE_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            logger.warning("cannot read %s: %s", path, e.strerror or e)
            continue
        rules.extend(parse_rules(text.splitlines(), base))
    return rules


def ignored(rules: Sequence[Rule], rel: str, is_dir: bool) -> bool:
    """Whether the last rule matching ``rel`` ignores it."""
    for rule in reversed(rules):
        if rule.matches(rel, is_dir):
            return not rule.negate
    return False


def glob_regex(parts: list[str], *, gitignore: bool) -> str:
    """The regular expression of a glob split at ``/``: ``*`` and ``?`` within a folder,
    ``**`` across folders, ``[abc]`` classes (``[!a]`` negated).

    ``gitignore`` adds git's extras: ``\\`` escapes the next character and ``[^a]`` also
    negates. The path globs of ``reindex`` take ``\\`` and ``^`` literally.

    The expression cannot backtrack without end, whatever the glob: what follows a ``*``
    in a name, and the names that follow a ``**``, are matched at their first place, in
    atomic groups. That first place is always a right one: what stands between two stars
    has a fixed length, so matching it later only leaves less for the rest. Written
    plainly, forty stars and an ``x`` took longer than a day against one long name.
    """
    groups: list[list[str]] = [[]]  # the names before the first ``**``, and after each
    for part in parts:
        if part == "**":
            if groups[-1] or len(groups) == 1:  # ``**/**`` is one ``**``
                groups.append([])
        else:
            groups[-1].append(_segment(part, gitignore))
    head, *skipped = groups
    out = "/".join(head) + ("/" if head and skipped else "")
    for i, names in enumerate(skipped):
        run = "/".join(names)
        if not names:  # the glob ends with ``**``: anything below
            out += ".*"
        elif i < len(skipped) - 1:  # names between two ``**``, with the ``/`` after them
            out += f"(?>(?:[^/]*/)*?{run}/)"
        else:  # the last names: at the end, or wherever the caller lets them end
            out += f"(?:[^/]*/)*{run}"
    return out


def _segment(seg: str, gitignore: bool) -> str:
    """A name's expression; what follows each ``*`` but the last is found at its first
    place (see ``glob_regex``), the rest at the name's end."""
    chunks: list[list[str]] = [[]]
    for piece in _pieces(seg, gitignore):
        if piece is None:
            chunks.append([])
        else:
            chunks[-1].append(piece)
    first, *rest = ("".join(c) for c in chunks)
    if not rest:
        return first
    *middle, last = rest
    return first + "".join(f"(?>[^/]*?{m})" for m in middle if m) + f"[^/]*{last}"


def _pieces(seg: str, gitignore: bool) -> list[str | None]:
    """The expressions of a name's characters and classes, None for each ``*``."""
    negators = ("!", "^") if gitignore else ("!",)
    out: list[str | None] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if gitignore and c == "\\" and i + 1 < len(seg):
            out.append(re.escape(seg[i + 1]))
            i += 1
        elif c == "*":
            out.append(None)
        elif c == "?":
            out.append("[^/]")
        elif (
            c == "["
            and (j := seg.find("]", i + 2 if seg[i + 1 : i + 2] in (*negators, "]") else i + 1))
            != -1
        ):
            inner = seg[i + 1 : j]
            negated = inner[:1] in negators
            inner = inner[1:] if negated else inner
            inner = inner.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
            out.append(f"[{'^/' if negated else ''}{inner}]" if inner else "(?!)")
            i = j
        else:
            out.append(re.escape(c))
        i += 1
    return out
