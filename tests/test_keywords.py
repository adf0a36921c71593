"""The keyword channel leaves out words most chunks contain, and still answers with them."""

from __future__ import annotations

from pathlib import Path

import pytest

from micro_rag_mcp.core.records import FileRecord, NewChunk
from micro_rag_mcp.local.answers.keywords import keyword_hits
from micro_rag_mcp.local.catalog import Catalog


def catalog_of(path: Path, texts: list[str]) -> Catalog:
    catalog = Catalog.open(path / "catalog.sqlite3")
    for i, text in enumerate(texts):
        record = FileRecord(f"f{i}.txt", ".txt", 10, 1, None, "ok", None)
        catalog.writes.store_file(record, [NewChunk(0, 0, len(text), 1, 1, None, "", text)])
    return catalog


def test_a_word_in_most_chunks_is_left_out_and_the_order_is_kept(tmp_path: Path) -> None:
    texts = [f"quarterly report number {i}" for i in range(20)]
    texts[3] = "quarterly report on the walrus colony, walrus counts"
    texts[11] = "walrus sighting in the quarterly report"
    catalog = catalog_of(tmp_path, texts)
    hits, _ = keyword_hits(catalog, ["report", "walrus"], 10, (1.0, 1.0))
    assert [cid for cid, _ in hits] == [4, 12]  # chunk ids start at 1
    full = catalog.keywords.keyword_search('"report" OR "walrus"', 10)
    assert [cid for cid, _ in full][:2] == [4, 12]  # the same order as scoring every row
    assert len(full) == 10  # which would have scored every chunk


def test_a_query_of_common_words_only_still_finds_chunks(tmp_path: Path) -> None:
    catalog = catalog_of(tmp_path, [f"quarterly report number {i}" for i in range(30)])
    hits, _ = keyword_hits(catalog, ["quarterly", "report"], 5, (1.0, 1.0))
    assert len(hits) == 5 and all(score > 0 for _, score in hits)


@pytest.mark.parametrize(("term", "share"), [("even", 0.5), ("all", 1.0), ("none", 0.0)])
def test_term_shares_are_estimated_from_windows_spread_over_the_ids(
    tmp_path: Path, term: str, share: float
) -> None:
    texts = [("even all" if i % 2 == 0 else "odd all") + f" row{i}" for i in range(400)]
    catalog = catalog_of(tmp_path, texts)
    shares, _ = catalog.terms.shares_among([term], windows=4, width=20)  # 80 of the 400 rows
    assert shares[term] == pytest.approx(share)


@pytest.mark.parametrize("spread", [False, True])
def test_cjk_shares_are_counted_among_the_chunks_that_hold_cjk_text(
    tmp_path: Path, spread: bool
) -> None:
    # A mostly English folder: its four Chinese passages come last, or one in a hundred,
    # outside every window over the chunk ids.
    chinese = ["图书馆的古籍", "图书馆的报纸", "市政厅的会议", "市政厅的报告"]
    texts = [f"english row {i}" for i in range(400)]
    if spread:
        for n, text in enumerate(chinese):
            texts[50 + 100 * n] = text
    else:
        texts += chinese
    catalog = catalog_of(tmp_path, texts)
    shares, _ = catalog.terms.shares_among(["图书", "的古", "政厅", "火车"], 4, 20, "chunks_cjk")
    assert shares == pytest.approx({"图书": 0.5, "的古": 0.25, "政厅": 0.5, "火车": 0.0})
    # The words' shares are still counted over every chunk's windows.
    assert catalog.terms.shares_among(["english"], 4, 20)[0]["english"] == pytest.approx(1.0)
    # and a pair's idf is FTS5's over the rows that hold CJK text
    assert catalog.terms.shares_among([], 4, 20, table="chunks_cjk")[1] == 4
    assert catalog.terms.shares_among([], 4, 20)[1] == len(texts)


def test_a_term_given_twice_is_searched_and_weighed_once(tmp_path: Path) -> None:
    texts = [f"harbour log entry {i}" for i in range(20)]
    texts[5] = "a narwhal was seen near the harbour"
    texts[9] = "a walrus was seen near the harbour"
    catalog = catalog_of(tmp_path, texts)
    once, weight = keyword_hits(catalog, ["narwhal", "walrus"], 5, (1.0, 1.0))
    assert once[0][1] == pytest.approx(once[1][1])  # the two words weigh the same
    twice, weight_twice = keyword_hits(catalog, ["narwhal", "walrus", "walrus"], 5, (1.0, 1.0))
    assert twice == once and weight_twice == pytest.approx(weight)
