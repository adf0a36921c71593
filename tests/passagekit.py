"""Generated folders for the passage tests: a handbook that repeats a paragraph in
several chapters, and a runbook whose sections are headed by error codes."""

from __future__ import annotations

import random
from pathlib import Path

_OFFICE = (
    "account approval budget calendar contract customer deadline delivery department "
    "document employee equipment estimate invoice manager meeting office order "
    "payment project purchase quarter receipt record request review schedule service "
    "supplier team training travel vendor warehouse report policy access backup "
    "network server storage license laptop printer badge parking holiday benefit "
    "pension insurance"
)
_WORDS = tuple(_OFFICE.split())

REPEATED = (
    "Expense claims must be filed within thirty days of purchase, with the original "
    "receipt attached, and approved by your line manager before the finance office "
    "reimburses them; claims above five hundred euros also need the director's signature."
)
CHAPTERS = ("Travel", "Equipment", "Training", "Client visits", "Remote work", "Events")


def prose(rng: random.Random, sentences: int) -> str:
    """Filler sentences of common office words, different for every seed."""
    return " ".join(
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 14))).capitalize() + "."
        for _ in range(sentences)
    )


def write_handbook(folder: Path) -> list[str]:
    """A Markdown handbook of chapters, each with its own text and a section on expense
    claims that repeats ``REPEATED``, and a policy file that holds it too; the paths."""
    rng = random.Random(7)
    parts = ["# Staff handbook\n"]
    for name in CHAPTERS:
        parts.append(f"## {name}\n\n{prose(rng, 4)}\n\n### Expense claims\n\n{REPEATED}\n")
    (folder / "handbook.md").write_text("\n".join(parts), encoding="utf-8")
    (folder / "expenses.md").write_text(
        f"# Expense policy\n\n{REPEATED}\n\n{prose(rng, 4)}\n", encoding="utf-8"
    )
    return ["handbook.md", "expenses.md"]


CODES = (4468, 4469, 4470, 4471, 4472, 4473, 4474)
FIX_4471 = "Restart the ledger replica and clear the stale advisory lock in pg_locks."


def write_runbook(folder: Path) -> str:
    """A runbook of one section per error code; other sections name ERR-4471 in passing.
    The ERR-4471 section's body never repeats its code, and its fix stands in a later
    passage than its heading. Returns its path."""
    rng = random.Random(11)
    parts = ["# Operations runbook\n", prose(rng, 4)]
    for code in CODES:
        body = [prose(rng, 4), prose(rng, 4)]
        if code == 4471:  # a long section: its fix is in a passage of its own
            body += [prose(rng, 4), prose(rng, 4), FIX_4471]
        else:
            body.append("If it follows ERR-4471, resolve that one first.")
        body.append(prose(rng, 4))
        parts.append(f"## ERR-{code}: {_WORDS[code % 50]} failure\n\n" + "\n\n".join(body))
    (folder / "runbook.md").write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    return "runbook.md"


def write_notes(folder: Path, count: int = 24) -> None:
    """Other notes of the same office words, as a real folder holds beside a runbook or
    a handbook: a rare word stays rare (BM25 gives a word in most passages no weight)."""
    rng = random.Random(3)
    for i in range(count):
        text = f"# Note {i}\n\n{prose(rng, 5)}\n\n{prose(rng, 5)}\n"
        (folder / f"note-{i:02d}.md").write_text(text, encoding="utf-8")
