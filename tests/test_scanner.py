"""Which files a scan finds, and what a path glob selects."""

from __future__ import annotations

import os
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from micro_rag_mcp.core.errors import InvalidArgument
from micro_rag_mcp.ingest.ignore import ignored, parse_rules
from micro_rag_mcp.ingest.scanner import PathGlob, ScanRules, scan
from tests.diskkit import fail_listing


def rels(root: Path, exts: tuple[str, ...] = (".txt", ".md"), glob: str | None = None) -> list[str]:
    rules = ScanRules(root, exts, (root / "index",), frozenset({"node_modules", "__pycache__"}))
    return sorted(f.rel for f in scan(rules, PathGlob(glob) if glob else None).files)


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")


def test_scan_skips_index_hidden_and_vendored_folders(tmp_path: Path) -> None:
    for rel in [
        "a.txt",
        "B.MD",
        "x.pdf",
        "index/i.txt",
        ".git/g.txt",
        ".hidden.txt",
        "node_modules/m.txt",
        "__pycache__/p.txt",
        "sub/deep/d.md",
    ]:
        touch(tmp_path / rel)
    assert rels(tmp_path) == ["B.MD", "a.txt", "sub/deep/d.md"]


def test_scan_never_follows_symlinks_out_of_the_folder(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    touch(root / "in.txt")
    touch(outside / "secret.txt")
    os.symlink(outside / "secret.txt", root / "link.txt")
    os.symlink(outside, root / "linkdir")
    os.symlink(root / "in.txt", root / "inner-link.txt")
    os.symlink(root, root / "loop")
    assert rels(root) == ["in.txt", "inner-link.txt"]


def test_scan_handles_very_deep_folders(tmp_path: Path) -> None:
    deep = tmp_path
    for _ in range(60):
        deep = deep / "d"
    touch(deep / "bottom.txt")
    assert rels(tmp_path) == ["d/" * 60 + "bottom.txt"]


def test_scan_keeps_odd_names(tmp_path: Path) -> None:
    for rel in ["with space.txt", "ünï cödé.md", "new\nline.txt"]:
        touch(tmp_path / rel)
    assert rels(tmp_path) == sorted(["with space.txt", "ünï cödé.md", "new\nline.txt"])


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("reports/**/*.pdf", "reports/2024/q1/a.pdf", True),
        ("reports/**/*.pdf", "reports/a.pdf", True),
        ("reports/**/*.pdf", "other/reports/a.pdf", False),
        ("*.md", "a.md", True),
        ("*.md", "sub/a.md", False),
        ("**/*.md", "sub/a.md", True),
        ("notes", "notes/x/y.txt", True),
        ("notes", "notesy.txt", False),
        ("a?.txt", "ab.txt", True),
        ("[ab].txt", "c.txt", False),
        ("[!ab].txt", "c.txt", True),
    ],
)
def test_path_glob_matching(pattern: str, path: str, hit: bool) -> None:
    assert PathGlob(pattern).matches(path) is hit


@pytest.mark.parametrize("pattern", ["../x", "/etc/*", "a/../../b", "~/docs", "C:/x", "  "])
def test_path_glob_refuses_patterns_leaving_the_folder(pattern: str) -> None:
    with pytest.raises(InvalidArgument):
        PathGlob(pattern)


@pytest.mark.parametrize("pattern", ["[z-a]", "a[b-a]*.txt"])
def test_path_glob_with_a_bad_range_is_a_clear_error(pattern: str) -> None:
    with pytest.raises(InvalidArgument, match="not a valid pattern"):
        PathGlob(pattern)


def test_path_glob_brackets_inside_a_class_are_literal() -> None:
    assert PathGlob("[[:a]b.txt").matches(":b.txt")


def _plainly(parts: list[str], names: list[str]) -> bool:
    """What a glob means, name by name: ``**`` any number of names (one at least at the
    end), any other part one name as ``fnmatch`` reads it; a glob that runs out first
    names a folder, and takes what is below it."""
    if not parts:
        return True
    if not names:
        return False
    if parts[0] == "**":
        return len(parts) == 1 or _plainly(parts[1:], names) or _plainly(parts, names[1:])
    return fnmatchcase(names[0], parts[0]) and _plainly(parts[1:], names[1:])


_names = st.lists(st.text("ab[]", min_size=1, max_size=5), min_size=1, max_size=5)
_parts = st.lists(st.just("**") | st.text("ab*?[]", min_size=1, max_size=5), max_size=4)


@given(parts=_parts.filter(bool), names=_names)
def test_path_glob_means_what_it_says_name_by_name(parts: list[str], names: list[str]) -> None:
    assert PathGlob("/".join(parts)).matches("/".join(names)) is _plainly(parts, names)


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("*" * 40 + "x", "a" * 200, False),
        ("*a" * 40 + "x", "a" * 200, False),
        ("*a" * 40, "a" * 200, True),
        ("[ab]*" * 40 + "x", "ab" * 100, False),
        ("**/" * 40 + "x", "a/" * 100 + "b", False),
        ("**/a/" * 40 + "x", "a/" * 100 + "b", False),
        ("**/a/" * 40 + "b", "a/" * 100 + "b", True),
    ],
)
def test_no_glob_makes_matching_backtrack_without_end(pattern: str, path: str, hit: bool) -> None:
    """Written plainly as expressions, each of these takes longer than anyone waits: every
    way of sharing the name among the stars, or the folders among the ``**``, is tried."""
    assert PathGlob(pattern).matches(path) is hit
    rule = parse_rules([pattern])[0]  # a .gitignore in the folder is read the same way
    assert rule.matches(path, is_dir=False) is hit


def test_a_folder_that_cannot_be_listed_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(tmp_path / "ok" / "a.txt")
    touch(tmp_path / "share" / "b.txt")
    fail_listing(monkeypatch, "share")
    rules = ScanRules(tmp_path, (".txt",), (), frozenset())
    result = scan(rules)
    assert [f.rel for f in result.files] == ["ok/a.txt"]
    assert result.unlisted == ["share/"] and result.may_hold("share/b.txt")
    assert not result.may_hold("ok/b.txt")


# --------------------------------------------------------------------------- ignore rules


def scan_rels(root: Path, ignore: tuple[str, ...] = (), ignore_files: bool = True) -> list[str]:
    rules = ScanRules(root, (".txt", ".md"), (), frozenset(), ignore, ignore_files)
    return sorted(f.rel for f in scan(rules).files)


def test_gitignore_and_ignore_files_leave_paths_out(tmp_path: Path) -> None:
    for rel in [
        "a.txt",
        "keep.md",
        "notes/secret-plan.md",
        "notes/public.md",
        "build/out.txt",
        "docs/build/inner.txt",
        "drafts/d.txt",
        "docs/drafts/d.txt",
        "sub/local.txt",
        "sub/deeper/local.txt",
        "sub/important.txt",
        "sub/other.txt",
        "logs/app.txt",
    ]:
        touch(tmp_path / rel)
    (tmp_path / ".gitignore").write_text(
        "# comment\n*.md\n!keep.md\nbuild/\n/drafts\nsub/important.txt\n"
    )
    (tmp_path / ".ignore").write_text("logs\n")
    (tmp_path / "sub" / ".gitignore").write_text("local.txt\n!important.txt\n")
    assert scan_rels(tmp_path) == [
        "a.txt",
        "docs/drafts/d.txt",  # "/drafts" is anchored to the folder of its .gitignore
        "keep.md",
        "sub/important.txt",  # the deeper file's "!" wins
        "sub/other.txt",
    ]
    assert len(scan_rels(tmp_path, ignore_files=False)) == 13


def test_a_path_inside_an_ignored_folder_cannot_be_taken_back(tmp_path: Path) -> None:
    touch(tmp_path / "build" / "keep.txt")
    (tmp_path / ".gitignore").write_text("build/\n!build/keep.txt\n")
    assert scan_rels(tmp_path) == []


def test_exclude_patterns_always_apply(tmp_path: Path) -> None:
    for rel in ["a.txt", "b.md", "old/x.txt", "deep/old/y.txt", "deep/z.txt"]:
        touch(tmp_path / rel)
    (tmp_path / ".gitignore").write_text("!b.md\n")
    assert scan_rels(tmp_path, ignore=("*.md", "old/")) == ["a.txt", "deep/z.txt"]
    assert scan_rels(tmp_path, ignore=("/old", "deep/**/z.txt")) == [
        "a.txt",
        "b.md",
        "deep/old/y.txt",
    ]


def test_virtual_environments_are_never_entered(tmp_path: Path) -> None:
    touch(tmp_path / "env" / "lib" / "site.txt")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    touch(tmp_path / "a.txt")
    assert scan_rels(tmp_path) == ["a.txt"]


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "hit"),
    [
        ("*.log", "a/b/c.log", False, True),
        ("a/*.log", "a/b/c.log", False, False),
        ("a/**/c.log", "a/b/x/c.log", False, True),
        ("**/tmp", "x/tmp", True, True),
        ("tmp/", "x/tmp", False, False),
        ("file[0-9].txt", "file7.txt", False, True),
        ("file[!0-9].txt", "file7.txt", False, False),
        ("\\#notes.txt", "#notes.txt", False, True),
        ("doc?.md", "doc/.md", False, False),
    ],
)
def test_gitignore_pattern_syntax(pattern: str, path: str, is_dir: bool, hit: bool) -> None:
    assert ignored(parse_rules([pattern]), path, is_dir) is hit
