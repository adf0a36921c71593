"""A folder the scan cannot list is a failure with its reason, counted once, everywhere.

Permissions do not stop root, so the folder that cannot be listed is one whose path is
longer than the system allows (``ENAMETOOLONG``, for every user); a ``chmod 000`` folder
is tested too where the tests do not run as root.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from micro_rag_mcp.local.engine import Engine
from tests.fakes import FakeEmbedder
from tests.indexkit import write
from tests.settingskit import make_settings

NAME = "n" * 250


def too_deep(data: Path) -> str:
    """Folders nested until the innermost one's path is over PATH_MAX (4096 bytes); made
    through descriptors, since no path may name it. Its path relative to ``data``."""
    fd = os.open(data, os.O_RDONLY)
    depth = 0
    try:
        while len(str(data)) + depth * (len(NAME) + 1) <= 4200:
            os.mkdir(NAME, dir_fd=fd)
            inner = os.open(NAME, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
            depth += 1
        note = os.open("lost.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(note, b"a note nobody can list")
        os.close(note)
    finally:
        os.close(fd)
    # A path of up to 4095 bytes can be listed: the last folder whose path fits is, the
    # one inside it is not.
    fits = (4095 - len(str(data))) // (len(NAME) + 1)
    return "/".join([NAME] * (fits + 1)) + "/"


def bring_up(data: Path, unlisted: str) -> None:
    """Move the folder that cannot be listed to ``data/found``, where it can."""
    *above, name = unlisted.rstrip("/").split("/")
    fd = os.open(data, os.O_RDONLY)
    top = os.open(data, os.O_RDONLY)
    try:
        for part in above:
            inner = os.open(part, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.rename(name, "found", src_dir_fd=fd, dst_dir_fd=top)
    finally:
        os.close(fd)
        os.close(top)


def failures(engine: Engine) -> list[tuple[str, str]]:
    return [(p, r) for p, r in engine.status().failed]


def check_counted_once(data: Path, unlisted: str, reason: str) -> None:
    write(data / "note.md", "a note about herons")
    engine = Engine(make_settings(data), FakeEmbedder)
    try:
        for _ in range(2):  # a second pass counts it once, not twice
            report = engine.reindex()
            assert report.files_failed == [(unlisted, f"cannot list this folder: {reason}")]
            assert report.files_added + report.files_unchanged == 1
        assert failures(engine) == report.files_failed
        outcome = engine.search("herons", score_threshold=0.0)
        assert outcome.state.files_failed == 1 and outcome.state.files_indexed == 1
    finally:
        engine.stop()


def test_a_folder_too_deep_to_list_is_counted_among_the_failures(data: Path) -> None:
    unlisted = too_deep(data)
    check_counted_once(data, unlisted, "File name too long")


@pytest.fixture
def locked(data: Path) -> Iterator[Path]:
    folder = data / "private"
    write(folder / "secret.md", "a secret note")
    folder.chmod(0)
    try:
        yield folder
    finally:
        folder.chmod(stat.S_IRWXU)


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root lists a chmod 000 folder"
)
def test_a_folder_without_permission_is_counted_among_the_failures(
    data: Path, locked: Path
) -> None:
    check_counted_once(data, "private/", "Permission denied")


def test_a_folder_listed_again_is_no_longer_a_failure(data: Path) -> None:
    unlisted = too_deep(data)
    write(data / "note.md", "a note about herons")
    engine = Engine(make_settings(data), FakeEmbedder)
    try:
        assert engine.reindex().files_failed
        bring_up(data, unlisted)
        report = engine.reindex()
        assert report.files_failed == [] and failures(engine) == []
        assert report.files_added == 1 and report.files_removed == 0  # found/lost.md
        assert engine.status().files_indexed == 2
    finally:
        engine.stop()
