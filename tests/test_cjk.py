"""Chinese, Japanese and Korean passages are found by any run of two or more characters."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.milvus.cjk_words import gram_token, gram_tokens, pair_word
from micro_rag_mcp.text.cjk import bigrams, has_cjk, query_grams
from tests.formatfactory import make_xlsx


def cjk_rows(index: Path) -> int:
    conn = sqlite3.connect(index / "catalog.sqlite3")
    count = int(conn.execute("SELECT count(*) FROM chunks_cjk").fetchone()[0])
    conn.close()
    return count


def by_keyword(engine: Engine, query: str) -> list[str]:
    """Paths the keyword channel found, at the default threshold (the fake embedder's
    cosines say nothing, so what the vector channel adds is left aside)."""
    return [h.chunk.path for h in engine.search(query, 5).hits if "keyword" in h.channels]


def test_bigrams_of_cjk_runs_only() -> None:
    assert bigrams("東京都庁 in Tokyo, 銀 행") == "東京 京都 都庁 銀 행"
    assert bigrams("plain English") == ""
    assert has_cjk("カタカナ") and has_cjk("한국어") and not has_cjk("café")


def test_bigrams_become_ascii_words_for_a_store_that_cannot_split_runs() -> None:
    assert gram_token("東京") == "cjk006771004eac" and gram_token("𠀀") == "cjk020000"
    tokyo, kyoto, silver = gram_token("東京"), gram_token("京都"), gram_token("銀")
    assert gram_tokens("東京都 and 銀") == [tokyo, kyoto, silver]
    assert [gram_token(g) for g in query_grams("東京 東京都 銀")] == [tokyo, kyoto]
    assert query_grams("東 only one") == []


def test_a_query_is_searched_for_every_bigram_of_its_runs() -> None:
    assert query_grams('東京 "tower" 都庁') == ["東京", "都庁"]
    assert query_grams("東京都庁 東京") == ["東京", "京都", "都庁"]
    assert query_grams("東 only one") == []
    assert query_grams('NEAR(" 東京") *') == ["東京"]
    long = "被告人" * 3 + "".join(chr(0x4E00 + i) for i in range(600))
    assert len(query_grams(long)) > 500  # a case description keeps all of its pairs


def test_a_passage_holding_the_whole_run_ranks_above_one_holding_a_part(
    engine: Engine, data: Path
) -> None:
    (data / "whole.txt").write_text("東京都庁の職員。")
    (data / "part.txt").write_text("東京の職員と京都の人。")
    engine.reindex()
    assert by_keyword(engine, "東京都庁")[0] == "whole.txt"


@pytest.fixture
def cjk_folder(data: Path) -> Path:
    (data / "zh.txt").write_text("北京大学的图书馆藏有许多古籍。研究人员每天都来查阅资料。")
    (data / "ja.md").write_text("# 報告\n\n東京都庁の職員は毎朝九時に会議を開きます。")
    (data / "ko.txt").write_text("서울특별시청은 매일 아침 회의를 엽니다.")
    (data / "mixed.txt").write_text("The Shinkansen から見た富士山 was beautiful at dawn.")
    (data / "en.txt").write_text("Ordinary English text about libraries and meetings.")
    make_xlsx(data / "表.xlsx", {"売上": [["地域", "担当"], ["関西", "山田太郎"]]})
    return data


def test_two_or_more_characters_find_the_passage_in_every_script(
    engine: Engine, cjk_folder: Path
) -> None:
    engine.reindex()
    assert by_keyword(engine, "图书馆") == ["zh.txt"]
    assert by_keyword(engine, "古籍") == ["zh.txt"]  # inside a run, not at its start
    assert by_keyword(engine, "都庁") == ["ja.md"]
    assert by_keyword(engine, "会議") == ["ja.md"]
    assert by_keyword(engine, "회의를") == ["ko.txt"]
    assert by_keyword(engine, "富士山 Shinkansen")[0] == "mixed.txt"
    hit = engine.search("山田", 1).hits[0]
    assert hit.chunk.path == "表.xlsx" and hit.chunk.locator == 'sheet "売上" row 2'
    assert "keyword" in hit.channels


def test_a_deleted_file_leaves_the_cjk_index_and_english_adds_nothing(
    engine: Engine, cjk_folder: Path
) -> None:
    engine.reindex()
    before = cjk_rows(cjk_folder / "index")
    assert before == 5  # every chunk with CJK text, and none of the English one
    (cjk_folder / "zh.txt").unlink()
    engine.reindex()
    assert cjk_rows(cjk_folder / "index") == before - 1
    assert by_keyword(engine, "图书馆") == []


def test_a_pair_word_is_one_short_ascii_word_and_tells_every_pair_apart() -> None:
    samples = ["東京", "京都", "東", "京", "\U00020000\U0002fa1d", "가나", "东京"]
    words = [pair_word(g) for g in samples]
    assert len(set(words)) == len(samples)
    assert all(w.isascii() and w.isalnum() and w == w.lower() and len(w) <= 9 for w in words)
