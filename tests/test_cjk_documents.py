"""A long CJK query is matched against whole files too, not only against passages."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from micro_rag_mcp.local.answers.keywords import or_query
from micro_rag_mcp.local.answers.search import keyword_evidence
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.search.documents import DOCUMENT_GRAMS
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.plan import plan_query
from micro_rag_mcp.search.scope import SearchScope, parse_scope
from micro_rag_mcp.text.cjk import MAX_GRAM_REPEATS, query_gram_counts, whole_text
from tests.cjkkit import DESCRIPTION, write_case_folder


def file_rows(index: Path) -> dict[str, str]:
    """Each file's row of pairs, read back from the index of the contentless table."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    conn.execute("CREATE VIRTUAL TABLE temp.pairs USING fts5vocab(main, files_cjk, instance)")
    rows = conn.execute(
        "SELECT f.path, p.term FROM temp.pairs p JOIN files f ON f.id = p.doc"
        " ORDER BY f.path, p.offset"
    ).fetchall()
    conn.close()
    found: dict[str, list[str]] = {}
    for path, term in rows:
        found.setdefault(path, []).append(term)
    return {path: " ".join(terms) for path, terms in found.items()}


def by_keyword(engine: Engine, query: str, scope: SearchScope | None = None) -> list[str]:
    found = engine.search(query, 5, 0.0, scope).hits
    return [h.chunk.path for h in found if "keyword" in h.channels]


def test_a_long_query_ranks_the_file_holding_all_of_it_above_a_passage_holding_part_twice(
    engine: Engine, data: Path
) -> None:
    write_case_folder(data)
    engine.reindex()
    assert sum(query_gram_counts(DESCRIPTION).values()) >= DOCUMENT_GRAMS
    catalog = Catalog.open_reader(data / "index" / "catalog.sqlite3")
    try:  # the passages alone put the repeated third first
        best = catalog.keywords.cjk_search(or_query(list(query_gram_counts(DESCRIPTION))), 5)
        assert catalog.chunks.fetch([best[0][0]])[best[0][0]].path == "part.txt"
        # A short query is a passage's: its hits are the passage channel's alone.
        short = DESCRIPTION[2:8]
        hits, _ = keyword_evidence(catalog, plan_query(short, SearchParams()), SearchParams())
        assert hits == catalog.keywords.cjk_search(or_query(list(query_gram_counts(short))), 200)
    finally:
        catalog.close()
    assert by_keyword(engine, DESCRIPTION)[0] == "whole.txt"


def test_a_scope_keeps_the_whole_file_match_inside_it(engine: Engine, data: Path) -> None:
    write_case_folder(data)
    engine.reindex()
    assert by_keyword(engine, DESCRIPTION, parse_scope(path_glob="part.txt")) == ["part.txt"]


def test_each_file_with_cjk_text_has_one_row_of_its_whole_text(engine: Engine, data: Path) -> None:
    (data / "zh.txt").write_text("北京大学的图书馆。" + "研究" * 700 + "古籍。")
    (data / "en.txt").write_text("Ordinary English text.")
    engine.reindex()
    rows = file_rows(data / "index")
    assert list(rows) == ["zh.txt"]
    grams = rows["zh.txt"].split()
    assert grams.count("古籍") == 1 and grams.count("北京") == 1  # overlaps counted once
    assert grams.count("研究") == 700
    (data / "zh.txt").write_text("上海的博物馆。")
    engine.reindex()
    assert file_rows(data / "index") == {"zh.txt": "上海 博物 海的 物馆 的博"}  # sorted
    (data / "zh.txt").write_text("Now in English only.")
    engine.reindex()
    assert file_rows(data / "index") == {}
    (data / "zh.txt").write_text("上海的博物馆。")
    engine.reindex()
    (data / "zh.txt").unlink()
    engine.reindex()
    assert file_rows(data / "index") == {}


def test_a_query_counts_a_repeated_pair_a_bounded_number_of_times() -> None:
    assert query_gram_counts("東京 東京 東京都") == {"東京": 3, "京都": 1}
    assert query_gram_counts("東京" * 5000) == {"東京": MAX_GRAM_REPEATS, "京東": MAX_GRAM_REPEATS}


def test_the_whole_text_keeps_what_lay_between_two_chunks_apart() -> None:
    # Chunks that do not touch (a line break between them): no pair is made across the gap.
    rows = [(1, "", "姓名", 0, 2), (2, "", "张三", 3, 5)]
    assert whole_text(rows).split("\n")[1:] == ["姓名", "张三"]
    overlapping = [(1, "", "北京大学", 0, 4), (2, "", "大学图书", 2, 6)]
    assert whole_text(overlapping) == "\n北京大学图书"
