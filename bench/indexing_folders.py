"""Generated folders for the indexing benchmarks: many small notes, a large folder of
Markdown and text, one very large DOCX. Each is made once under the work folder and
reused (a hidden ``.complete`` marks a finished one; the index never reads it)."""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path

WORDS = [
    "ledger",
    "harbor",
    "invoice",
    "policy",
    "travel",
    "expense",
    "report",
    "quarter",
    "revenue",
    "margin",
    "supplier",
    "contract",
    "river",
    "stone",
    "market",
    "orchard",
    "pump",
    "valve",
    "turbine",
    "sensor",
    "audit",
    "payroll",
    "lease",
    "tariff",
    "freight",
    "cargo",
    "vessel",
    "dock",
    "crane",
    "permit",
    "zoning",
    "survey",
    "parcel",
    "boundary",
    "easement",
]


def made_once(folder: Path, make: Callable[[Path], None]) -> Path:
    """``folder``, made by ``make`` unless an earlier run made all of it."""
    done = folder / ".complete"  # hidden: never indexed
    if not done.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        make(folder)
        done.write_text("")
    return folder


def notes_folder(work: Path, n: int) -> Path:
    """``n`` one-paragraph text files, 100 to a folder; made once, then reused."""
    return made_once(work / f"notes-{n}", lambda folder: _write_notes(folder, n))


def _write_notes(folder: Path, n: int) -> None:
    rng = random.Random(n)
    for i in range(n):
        sub = folder / f"d{i // 100:04d}"
        if i % 100 == 0:
            sub.mkdir()
        words = " ".join(rng.choice(WORDS) for _ in range(90))
        (sub / f"note{i:06d}.txt").write_text(f"Note {i}, item{i}. {words}.\n")
    old = time.time() - 3600  # stamps older than the racy window
    for path in folder.rglob("*.txt"):
        os.utime(path, (old, old))


def large_folder(work: Path, mb: int) -> Path:
    """About ``mb`` MB of text, made once: Markdown files of about 100 kB, 100 to a
    folder, and four plain text files that hold a sixteenth of it between them."""
    return made_once(work / f"large-{mb}mb", lambda folder: _write_large(folder, mb))


def _write_large(folder: Path, mb: int) -> None:
    rng = random.Random(mb)
    pool = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))) for _ in range(997)]
    total = mb * 1024 * 1024
    big = total // 16 // 4
    for i in range(4):
        (folder / f"log{i}.txt").write_text(_filler(rng, pool, f"log{i}", big, heading=""))
    for i in range((total - 4 * big) // 100_000):
        sub = folder / f"d{i // 100:04d}"
        sub.mkdir(exist_ok=True)
        (sub / f"doc{i:06d}.md").write_text(_filler(rng, pool, f"doc{i}", 100_000, heading="## "))


def _filler(rng: random.Random, pool: list[str], tag: str, size: int, *, heading: str) -> str:
    """About ``size`` characters of paragraphs, each with a word of its own; a heading (if
    any) every eight paragraphs."""
    parts: list[str] = []
    written = 0
    while written < size:
        k = len(parts)
        if heading and k % 9 == 0:
            parts.append(f"{heading}{tag} part {k // 9}\n\n")
        else:
            parts.append(f"{tag}x{k} {rng.choice(pool)}.\n\n")
        written += len(parts[-1])
    return "".join(parts)


def big_docx(work: Path, paragraphs: int = 20_000) -> Path:
    """A folder with one DOCX of about 870 pages (``paragraphs`` paragraphs), made once."""
    folder = work / "docx-large"
    path = folder / "handbook.docx"
    if path.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    import docx

    rng = random.Random(7)
    document = docx.Document()
    for i in range(paragraphs):
        if i % 200 == 0:
            document.add_heading(f"Chapter {i // 200}", level=1)
        document.add_paragraph(" ".join(rng.choice(WORDS) for _ in range(40)))
    tmp = folder / ".handbook.docx.tmp"
    document.save(str(tmp))
    os.replace(tmp, path)
    return folder
