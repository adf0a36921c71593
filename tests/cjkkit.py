"""A folder of long Chinese "cases" for the whole-file match: one holds the whole
description spread over its passages, one holds a third of it twice in one passage."""

from __future__ import annotations

from pathlib import Path

# Sixty distinct characters: a "case description" of 59 bigrams, none found elsewhere.
DESCRIPTION = "".join(chr(0x4E00 + i) for i in range(60))


def filler(start: int, length: int) -> str:
    """CJK text whose characters the description does not use, in sentences."""
    chars = [chr(0x6000 + (start + i) % 400) for i in range(length)]
    return "。".join("".join(chars[i : i + 30]) for i in range(0, length, 30)) + "。"


def write_case_folder(data: Path) -> None:
    """Cases of about the same length: one holds the whole description, a quarter in
    each of four passages far apart; one holds a third of it twice in one passage (the
    best single passage); the others none of it (so its pairs are rare)."""
    parts = [DESCRIPTION[i : i + 15] for i in range(0, 60, 15)]
    (data / "whole.txt").write_text(
        "".join(filler(i * 97, 1100) + part for i, part in enumerate(parts))
    )
    third = DESCRIPTION[:20] + "。" + DESCRIPTION[:20] + "。"
    (data / "part.txt").write_text(filler(7, 2200) + third + filler(11, 2200))
    for n in range(8):
        (data / f"other{n}.txt").write_text(filler(n * 31, 4400))
