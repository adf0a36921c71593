"""A CJK folder's catalog stays within a few times its text, and its contentless tables
(pairs, words) hold what a fresh index of the same files holds after changes and
deletes; a CJK chunk's text is stored compressed and read back whole."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.catalog.words import MARK_KEY, RUN_MARK, hashed
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.text.cjk import has_cjk
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings

# Common Han characters and kana, drawn with a skew as words are in prose (random pairs:
# more distinct ones than prose has, so a larger catalog than real text gets).
# (No katakana: the words a test removes are written in it.)
_CHARS = [chr(c) for c in range(0x4E00, 0x4E00 + 1500)] + [chr(c) for c in range(0x3041, 0x3094)]
_MAX_RATIO = 5.5  # catalog bytes per byte of text: 13.1 before (pairs stored as text), 4.8 now


def prose(rng: random.Random, length: int) -> str:
    """CJK sentences of ``length`` characters: a few frequent characters, many rare."""
    weights = [1.0 / (rank + 1) for rank in range(len(_CHARS))]
    chars = rng.choices(_CHARS, weights, k=length)
    return "。\n".join("".join(chars[i : i + 40]) for i in range(0, length, 40)) + "。\n"


def catalog_size(index: Path) -> int:
    path = index / "catalog.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path.stat().st_size


def term_counts(index: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """For each contentless table (pairs, words): every term with how many rows hold it
    and how often."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    found: dict[str, dict[str, tuple[int, int]]] = {}
    for table in ("chunks_cjk", "files_cjk", "chunks_fts"):
        conn.execute(f"CREATE VIRTUAL TABLE temp.v_{table} USING fts5vocab(main, {table}, row)")
        rows = conn.execute(f"SELECT term, doc, cnt FROM temp.v_{table}").fetchall()
        found[table] = {str(t): (int(d), int(c)) for t, d, c in rows}
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    conn.close()
    return found


@pytest.mark.slow  # over a second: kept out of the fast lane
def test_a_cjk_folders_catalog_is_a_few_times_its_text(engine: Engine, data: Path) -> None:
    rng = random.Random(7)
    for n in range(60):
        (data / f"case{n:02d}.txt").write_text(prose(rng, 2500 + 100 * n), encoding="utf-8")
    engine.reindex()
    text = sum(p.stat().st_size for p in data.glob("*.txt"))
    size = catalog_size(data / "index")
    assert size <= _MAX_RATIO * text
    conn = sqlite3.connect(data / "index" / "catalog.sqlite3")
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    conn.close()
    assert free == 0  # the first index merged the pairs and gave the pages back


@pytest.mark.slow  # over a second: kept out of the fast lane
def test_changed_and_deleted_files_leave_no_pairs_behind(
    engine: Engine, data: Path, tmp_path: Path
) -> None:
    rng = random.Random(3)
    for n in range(6):
        (data / f"note{n}.txt").write_text(prose(rng, 3000), encoding="utf-8")
    (data / "gone.txt").write_text("トショモクロク。" + prose(rng, 2000), encoding="utf-8")
    (data / "changed.txt").write_text("ハクブツテンジ。" + prose(rng, 2000), encoding="utf-8")
    (data / "mixed.txt").write_text("English words and 東京都庁 together.", encoding="utf-8")
    engine.reindex()
    assert engine.search("トショモクロク", 5).hits[0].chunk.path == "gone.txt"
    (data / "gone.txt").unlink()
    (data / "changed.txt").write_text("スイゾクサカナ。" + prose(rng, 1500), encoding="utf-8")
    (data / "mixed.txt").write_text("English words only now.", encoding="utf-8")
    engine.reindex()
    for removed in ("トショモクロク", "ハクブツテンジ", "東京都庁", "together"):
        hits = engine.search(removed, 5, 0.0).hits
        assert not [h for h in hits if "keyword" in h.channels]
    assert engine.search("スイゾクサカナ", 5).hits[0].chunk.path == "changed.txt"
    # What the changed catalog holds is what a fresh index of the same files holds.
    copy = tmp_path / "copy"  # the same files, without the first index's folder
    copy.mkdir()
    for path in data.glob("*.txt"):
        (copy / path.name).write_bytes(path.read_bytes())
    fresh = Engine(make_settings(copy, index_folder=tmp_path / "fresh"), FakeEmbedder)
    fresh.load_model()
    fresh.reindex()
    fresh.stop()
    assert term_counts(data / "index") == term_counts(tmp_path / "fresh")


def test_a_cjk_chunk_is_stored_compressed_and_read_back_whole(engine: Engine, data: Path) -> None:
    text = prose(random.Random(5), 900)
    (data / "zh.txt").write_text(text, encoding="utf-8")
    (data / "en.txt").write_text("Plain English prose stays as it is.", encoding="utf-8")
    engine.reindex()
    conn = sqlite3.connect(data / "index" / "catalog.sqlite3")
    kinds = dict(
        conn.execute(
            "SELECT f.path, typeof(c.text) FROM chunks c JOIN files f ON f.id = c.file_id"
        ).fetchall()
    )
    conn.close()
    assert kinds == {"zh.txt": "blob", "en.txt": "text"}
    hit = engine.search(text[40:60], 1).hits[0]
    assert hit.chunk.path == "zh.txt" and hit.chunk.text.strip() == text.strip()


def word_index(index: Path) -> dict[str, int]:
    """Each word of the word index with how many rows hold it."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    conn.execute("CREATE VIRTUAL TABLE temp.words USING fts5vocab(main, chunks_fts, row)")
    found = {str(t): int(d) for t, d in conn.execute("SELECT term, doc FROM temp.words")}
    conn.close()
    return found


def row_lengths(index: Path) -> list[str]:
    """The word index's row sizes (FTS5's own record of each row's words, per column)."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    found = [bytes(r[0]).hex() for r in conn.execute("SELECT sz FROM chunks_fts_docsize")]
    conn.close()
    return found


def test_a_long_cjk_run_is_one_mark_in_the_word_index_a_short_one_its_hash(
    engine: Engine, data: Path
) -> None:
    clause = "東京都庁の職員が毎朝会議を開く"  # 15 characters: a clause
    (data / "a.txt").write_text(f"{clause} met Tokyo staff.", encoding="utf-8")
    (data / "b.txt").write_text("大阪の港、デスマスク and its staff.", encoding="utf-8")
    engine.reindex()
    terms = word_index(data / "index")
    assert terms[RUN_MARK] == 1 and terms["tokyo"] == 1 and terms["staff"] == 2
    assert terms[hashed("大阪の港")] == 1 and terms[hashed("デスマスク")] == 1
    assert hashed(clause) not in terms and not any(has_cjk(t) for t in terms)
    assert engine.search(clause, 5).hits[0].chunk.path == "a.txt"  # by its pairs
    catalog = Catalog.open_reader(data / "index" / "catalog.sqlite3")
    try:
        found = catalog.keywords.keyword_search('"デスマスク"', 5)  # the word itself
        assert [catalog.chunks.fetch([c])[c].path for c, _ in found] == ["b.txt"]
    finally:
        catalog.close()


def test_a_catalog_made_before_the_mark_keeps_hashing_its_runs(
    engine: Engine, data: Path, tmp_path: Path
) -> None:
    # Its rows were written with each run's hash, and a contentless row is deleted by the
    # words it was made of: a catalog is written one way all its life.
    engine.reindex()  # an empty folder: the catalog is made, no row written
    catalog = Catalog.open(data / "index" / "catalog.sqlite3")
    with catalog.transaction() as conn:
        conn.execute("DELETE FROM meta WHERE key = ?", (MARK_KEY,))
    catalog.close()
    clause = "東京都庁の職員が毎朝会議を開く"
    (data / "a.txt").write_text(f"{clause} met Tokyo staff.", encoding="utf-8")
    engine.reindex()
    before = word_index(data / "index")
    assert before[hashed(clause)] == 1 and RUN_MARK not in before
    (data / "a.txt").write_text(f"大阪の港 met Osaka staff, {clause[::-1]}.", encoding="utf-8")
    engine.reindex()
    after = word_index(data / "index")
    assert hashed(clause) not in after and "tokyo" not in after
    assert after[hashed("大阪の港")] == 1 and after["osaka"] == 1
    # The same lengths a marked catalog gives the same text: BM25 reads the same rows.
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "a.txt").write_bytes((data / "a.txt").read_bytes())
    fresh = Engine(make_settings(copy, index_folder=tmp_path / "fresh"), FakeEmbedder)
    fresh.load_model()
    fresh.reindex()
    fresh.stop()
    assert row_lengths(tmp_path / "fresh") == row_lengths(data / "index")
    assert word_index(tmp_path / "fresh")[RUN_MARK] == 1
