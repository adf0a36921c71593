"""The incident notes of ``bench.at_work``: the same folder every time, each identifier
held by exactly one note, one chunk per note."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.incident_notes import SUBFOLDERS, identifier_queries, make_notes, write_notes
from micro_rag_mcp.core.settings import DEFAULT_CHUNK_SIZE


def test_notes_are_the_same_for_the_same_seed_and_differ_for_another() -> None:
    assert make_notes(400) == make_notes(400)
    assert make_notes(400) != make_notes(400, seed=20)


def test_each_of_100_identifiers_is_held_by_one_note_spread_over_the_subfolders() -> None:
    notes = make_notes(4000)
    held = [n for n in notes if n.identifier is not None]
    assert len(held) == 100 and len({n.identifier for n in held}) == 100
    assert Counter(n.path.split("/")[0] for n in held) == {f: 25 for f in SUBFOLDERS}
    words = Counter(w.strip(".,?") for n in notes for w in n.text.split())
    assert all(words[n.identifier] == 1 for n in held if n.identifier)
    queries = identifier_queries(notes)
    assert len(queries) == 100
    assert all(str(n.identifier) in q for (q, _), n in zip(queries, held, strict=True))
    assert [path for _, path in queries] == [n.path for n in held]


def test_notes_fit_one_chunk_and_fill_four_subfolders(tmp_path: Path) -> None:
    notes = make_notes(40, identifiers=8)
    assert max(len(n.text) for n in notes) < DEFAULT_CHUNK_SIZE
    write_notes(tmp_path / "docs", notes)
    files = sorted(p.relative_to(tmp_path / "docs").as_posix() for p in tmp_path.rglob("*.txt"))
    assert files == sorted(n.path for n in notes)
    assert Counter(f.split("/")[0] for f in files) == {f: 10 for f in SUBFOLDERS}
