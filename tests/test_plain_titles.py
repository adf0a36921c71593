"""A plain text file's first line, standing alone, is its title: embedded with every
passage of the file and searched beside each; an index made before reads its .txt files
again once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from micro_rag_mcp.ingest.files import extract_chunks
from micro_rag_mcp.ingest.readers import read_document
from micro_rag_mcp.ingest.readers.text import opening_title
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.text.cjk import whole_text
from micro_rag_mcp.text.vector_text import embedding_text
from tests.conftest import make_settings

BODY = "Pelicans fish by plunging their pouched bills into the sea. " * 30


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Pelican feeding habits\n\nPelicans fish by plunging.\n", "Pelican feeding habits"),
        ("\n\n  Pelican feeding habits  \n \nPelicans fish.\n", "Pelican feeding habits"),
        (
            "Experiments on a wing in a slipstream .\n\nA study.\n",
            "Experiments on a wing in a slipstream .",
        ),
        ("Dear Ann,\n\nThe pelicans are back.\n", ""),  # runs on
        ("Pelicans fish by plunging.\nThey nest on islands.\n", ""),  # no blank line below
        ("Pelican feeding habits\n\n\n", ""),  # nothing below it
        ("One paragraph only, no line break at all.", ""),
        ("x" * 151 + "\n\nbody\n", ""),  # too long for a title
        ("----\n\nbody\n", ""),  # no letter
        ("2024\n\nbody\n", ""),
        ("2024-01-05 10:31 deploy started\n\nbody\n", ""),  # a log line's stamp
        ("See https://example.org/docs\n\nbody\n", ""),
        ("# Pelican notes\n\nbody\n", "Pelican notes"),  # a heading's marks left out
        ("import os\n\nprint(os.getcwd())\nos.chdir(path)\nx = 1\n", ""),  # code
    ],
)
def test_the_first_line_is_a_title_only_when_it_stands_alone(text: str, title: str) -> None:
    assert opening_title(text) == title


def test_a_txt_file_gets_its_title_and_other_text_formats_do_not(tmp_path: Path) -> None:
    for name in ("notes.txt", "notes.md", "notes.org"):
        (tmp_path / name).write_text("Pelican feeding habits\n\nPelicans fish by plunging.\n")
    got = {
        name: read_document(tmp_path / name, max_bytes=1 << 20).title
        for name in ("notes.txt", "notes.md", "notes.org")
    }
    assert got == {"notes.txt": "Pelican feeding habits", "notes.md": "", "notes.org": ""}
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(b"\xef\xbb\xbf  \r\nPelican feeding habits\r\n\r\nThey plunge.\r\n")
    assert read_document(crlf, max_bytes=1 << 20).title == "Pelican feeding habits"


def test_a_passage_that_opens_with_the_title_does_not_carry_it_twice(tmp_path: Path) -> None:
    path = tmp_path / "birds.txt"
    path.write_text(f"Albatross field report\n\n{BODY}\n\n{BODY}\n")
    _, chunks = extract_chunks(
        read_document(path, max_bytes=1 << 20), path, make_settings(tmp_path)
    )
    assert len(chunks) >= 2
    assert {c.title for c in chunks} == {"birds — Albatross field report"}
    first, later = (embedding_text(c.title, c.text) for c in chunks[:2])
    assert first == chunks[0].text and first.startswith("Albatross field report\n")
    assert later == f"birds — Albatross field report\n{chunks[1].text}"
    # Only a whole first line is the title: "notes2" is not "notes".
    assert embedding_text("notes", "notes2 are here") == "notes\nnotes2 are here"
    assert embedding_text("", "They fish.") == "They fish."
    rows = [(1, "鹈鹕", "鹈鹕\n\n捕鱼", 0, 6), (2, "鹈鹕", "筑巢", 7, 9)]
    assert whole_text(rows) == "鹈鹕\n\n捕鱼\n筑巢"
    assert whole_text([(1, "标题", "标题二\n捕鱼", 0, 6)]) == "标题\n标题二\n捕鱼"


def titles(data: Path) -> dict[str, set[str]]:
    db = sqlite3.connect(data / "index" / "catalog.sqlite3")
    rows = db.execute("SELECT f.path, c.title FROM chunks c JOIN files f ON f.id = c.file_id")
    out: dict[str, set[str]] = {}
    for path, title in rows:
        out.setdefault(path, set()).add(title)
    db.close()
    return out


def test_every_passage_of_a_txt_file_is_found_by_its_title(engine: Engine, data: Path) -> None:
    (data / "birds.txt").write_text(f"Albatross field report\n\n{BODY}\n\n{BODY}\n")
    engine.reindex()
    hits = engine.search("albatross", top_k=10, score_threshold=-1.0).hits
    assert len(hits) >= 2  # the later passages do not say "albatross"; their title does
    assert all("keyword" in h.channels for h in hits)
    assert titles(data) == {"birds.txt": {"birds — Albatross field report"}}


def test_an_index_made_before_reads_its_txt_files_again_once(engine: Engine, data: Path) -> None:
    (data / "a.txt").write_text("Albatross field report\n\nThey glide for days.\n")
    (data / "b.md").write_text("# Heron notes\n\nThey stand still.\n")
    engine.reindex()
    db = sqlite3.connect(data / "index" / "catalog.sqlite3")
    with db:  # as a release before titles left it: no record of its readers
        db.execute("DELETE FROM meta WHERE key = 'readers'")
        db.execute(  # and the file's name its only title
            "UPDATE chunks SET title = 'a'"
            " WHERE file_id = (SELECT id FROM files WHERE path = 'a.txt')"
        )
    db.close()
    again = engine.reindex()
    assert (again.files_updated, again.files_unchanged) == (1, 1)
    assert titles(data) == {"a.txt": {"a — Albatross field report"}, "b.md": {"b › Heron notes"}}
    assert engine.reindex().files_unchanged == 2
