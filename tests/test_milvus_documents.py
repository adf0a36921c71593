"""A long CJK query on a Milvus store is matched against whole files, as embedded.

The store keeps each file's pairs in its grams collection (``rows.gram_rows``), under the
file's version as its chunks are; a store made before that collection gets its rows at
its next pass. Against one real milvus-lite server, started once for the module.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from micro_rag_mcp.core.address import StoreConfig
from micro_rag_mcp.core.errors import Stopped, StoreMismatch
from micro_rag_mcp.core.results import Progress
from micro_rag_mcp.local.answers.keywords import or_query
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.milvus.cjk_words import gram_tokens, pair_word
from micro_rag_mcp.milvus.engine import MilvusEngine
from micro_rag_mcp.milvus.index import FILES_LAYOUT, MilvusIndex
from micro_rag_mcp.milvus.keywords import K1, B, keyword_parts
from micro_rag_mcp.milvus.rows import BUCKETS, gram_rows
from micro_rag_mcp.milvus.shards import in_shard
from micro_rag_mcp.milvus.sync import write_grams
from micro_rag_mcp.milvus.whole_files import FileSample, FileStats, rescored, whole_file_hits
from micro_rag_mcp.search.documents import document_terms
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.text.cjk import query_gram_counts
from tests.cjkkit import DESCRIPTION, filler, write_case_folder
from tests.conftest import make_settings
from tests.fakes import FakeEmbedder
from tests.milvuskit import MilvusServer, store_engine

KEYWORD = SearchParams(channels=("keyword",))
OLDER_LAYOUT = "shard-key-range-1"  # the files layout of the release before NAME_grams


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    data = tmp_path / "docs"
    data.mkdir()
    write_case_folder(data)
    for path in data.iterdir():
        os.utime(path, ns=(10**18, 10**18))  # an old stamp: trusted at once
    return data


def grams_of(index: MilvusIndex) -> dict[str, list[str]]:
    """Each path's grams rows (their words), as the collection holds them."""
    rows = index.collections.connect().query(
        index.collections.grams, filter='path != ""', output_fields=["path", "pairs"]
    )
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(str(r["path"]), []).append(str(r["pairs"]))
    return out


def as_an_older_release_made_it(index: MilvusIndex) -> None:
    """No grams collection, and the files layout recorded before it."""
    index.collections.connect().drop_collection(index.collections.grams)
    index.collections.record_identity({"files": OLDER_LAYOUT})
    index.collections.check_identity(
        {"files": OLDER_LAYOUT}, ["files"]
    )  # an older release takes it


def paths(engine: Engine | MilvusEngine, query: str, k: int = 5) -> list[str]:
    return [h.chunk.path for h in engine.search(query, k, -1.0).hits]


@contextmanager
def both_stores(data: Path, milvus: MilvusServer) -> Iterator[tuple[Engine, MilvusEngine]]:
    """The embedded store and a Milvus store of ``data``, keyword channel only, indexed."""
    embedded = Engine(make_settings(data), FakeEmbedder)
    embedded.load_model()
    store = store_engine(data, milvus.config())
    embedded.params = store.params = KEYWORD
    try:
        embedded.reindex()
        store.reindex()
        yield embedded, store
    finally:
        embedded.stop()
        store.stop()


@contextmanager
def keyword_store(data: Path, milvus: MilvusServer) -> Iterator[MilvusEngine]:
    """A Milvus store of ``data``, keyword channel only, indexed."""
    store = store_engine(data, milvus.config())
    store.params = KEYWORD
    try:
        store.reindex()
        yield store
    finally:
        store.stop()


def test_a_long_query_ranks_the_file_holding_all_of_it_first_as_in_the_embedded_store(
    milvus: MilvusServer, cases: Path
) -> None:
    (cases / "gdpr.txt").write_text("GDPR rules for the processing of personal data.")
    with both_stores(cases, milvus) as (embedded, store):
        ours, theirs = paths(embedded, DESCRIPTION), paths(store, DESCRIPTION)
        assert ours[:2] == theirs[:2] == ["whole.txt", "part.txt"]
        assert set(ours) == set(theirs)
        # a word beside the description is searched and scored apart from its pairs, as
        # embedded: five passages hold pairs, and a pool of three for both would hold
        # those only
        words, pairs, _ = keyword_parts(
            store.index, store.keyword_stats, ["GDPR"], gram_tokens(DESCRIPTION), 1
        )
        assert [h.path for h in words] == ["gdpr.txt"]
        assert pairs[0].path in {"whole.txt", "part.txt"}
        query = f"{DESCRIPTION} GDPR"
        assert paths(store, query) == paths(embedded, query)
        assert set(paths(store, query)[:3]) == {"whole.txt", "part.txt", "gdpr.txt"}
        # a short query is a passage's: the repeated third is the best passage
        assert paths(store, DESCRIPTION[:12], 1) == paths(embedded, DESCRIPTION[:12], 1)
        assert paths(store, DESCRIPTION[:12], 1) == ["part.txt"]
        # with both channels, the whole file keeps its lead on the store too
        store.params = embedded.params = SearchParams()
        assert paths(store, DESCRIPTION, 1) == paths(embedded, DESCRIPTION, 1) == ["whole.txt"]


def test_a_file_s_grams_rows_follow_its_text(milvus: MilvusServer, tmp_path: Path) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    zh, en = data / "zh.txt", data / "en.txt"
    zh.write_text("上海的博物馆。")
    en.write_text("Ordinary English text.")
    store = store_engine(data, milvus.config())
    try:
        store.reindex()
        words = [pair_word(g) for g in ("上海", "海的", "的博", "博物", "物馆")]
        assert grams_of(store.index) == {"zh.txt": [" ".join(words)]}
        zh.write_text("北京" * 8000)  # 15,999 pairs: more than one row holds
        os.utime(zh, ns=(2 * 10**18, 2 * 10**18))
        store.reindex()
        rows = grams_of(store.index)["zh.txt"]
        assert len(rows) == 3
        held = [w for row in rows for w in row.split()]
        assert held.count(pair_word("北京")) == 8000 and held.count(pair_word("京北")) == 7999
        zh.write_text("Now in English only.")
        os.utime(zh, ns=(3 * 10**18, 3 * 10**18))
        store.reindex()
        assert grams_of(store.index) == {}
        zh.write_text("上海的博物馆。")
        os.utime(zh, ns=(4 * 10**18, 4 * 10**18))
        store.reindex()
        assert list(grams_of(store.index)) == ["zh.txt"]
        zh.unlink()
        store.reindex()
        assert grams_of(store.index) == {}
    finally:
        store.stop()


def test_a_store_made_before_the_grams_collection_gets_its_rows_at_its_next_pass(
    milvus: MilvusServer, cases: Path
) -> None:
    config = milvus.config()
    store = store_engine(cases, config)
    store.params = KEYWORD
    try:
        store.reindex()
        assert store.index.collections.grams_whole()
        as_an_older_release_made_it(store.index)
    finally:
        store.stop()
    reader = MilvusEngine(make_settings(cases), FakeEmbedder, config, folder=None)
    reader.load_model()
    writer = store_engine(cases, config)
    reader.params = writer.params = KEYWORD
    try:
        assert not reader.index.collections.grams_whole()
        report = writer.reindex()
        assert report.chunks_embedded == 0  # nothing embedded again
        assert reader.index.collections.grams_whole()
        assert sorted(grams_of(reader.index)) == sorted(p.name for p in cases.glob("*.txt"))
        # the pass recorded its layout: an older release, which would add files without
        # their grams rows, is refused from now on (it was taken before)
        assert reader.index.collections.identity()["files"] == FILES_LAYOUT
        with pytest.raises(StoreMismatch, match="another release"):
            reader.index.collections.check_identity({"files": OLDER_LAYOUT}, ["files"])
    finally:
        reader.stop()
        writer.stop()


def test_the_rows_of_a_store_made_before_are_whole_once_every_share_wrote_them(
    milvus: MilvusServer, cases: Path
) -> None:
    store = store_engine(cases, milvus.config())
    try:
        store.reindex()
        index = store.index
        index.collections.connect().drop_collection(index.collections.grams)
        index.collections.create(FakeEmbedder().dimension, {})  # the collection, without its marks
        assert not index.collections.grams_whole()
        index.collections.mark_grams((1, 2))
        assert not index.collections.grams_whole()
        index.collections.mark_grams((1, 3))
        index.collections.mark_grams((2, 2))
        assert index.collections.grams_whole()
    finally:
        store.stop()


def test_a_file_without_cjk_text_has_no_grams_rows() -> None:
    assert gram_rows("en.txt", 1, "Title", [("Only English here.", 0, 18)]) == []
    rows = gram_rows("zh.txt", 7, "", [("姓名", 0, 2), ("张三", 3, 5)])
    # chunks that do not touch make no pair across the gap
    assert rows == [
        {"path": "zh.txt", "version": 7, "pairs": f"{pair_word('姓名')} {pair_word('张三')}"}
    ]


def test_grams_rows_of_a_version_that_is_not_the_file_s_are_never_used(
    milvus: MilvusServer, cases: Path
) -> None:
    with keyword_store(cases, milvus) as store:
        index = store.index
        version = index.file_rows(["other0.txt"])["other0.txt"].version
        spans = [(DESCRIPTION + "。" + DESCRIPTION, 0, 121)]
        index.pairs.insert_grams(
            gram_rows("other0.txt", version + 1, "", spans)
        )  # a killed write's
        index.seal()
        counts = query_gram_counts(DESCRIPTION)
        chunks, known = index.count_chunks(), {}
        found = whole_file_hits(
            index, store.keyword_stats, store.file_stats, counts, 10, chunks, known
        )
        assert known["other0.txt"].version == version  # the rows read, for the search
        # Milvus matches the rows, but its file is not that version: not scored, not found
        matched = store.index.whole_files([pair_word(g) for g in counts], 30)
        assert ("other0.txt", version + 1) in [(p, v) for p, v, _ in matched]
        assert "other0.txt" not in [p for p, _, _ in found]
        assert "other0.txt" not in paths(store, DESCRIPTION, 10)
        assert paths(store, DESCRIPTION, 1) == ["whole.txt"]
        index.pairs.insert_grams(gram_rows("other0.txt", version, "", spans))  # as the current one
        index.seal()
        assert "other0.txt" in paths(store, DESCRIPTION, 10)


def made_before(milvus: MilvusServer, cases: Path) -> StoreConfig:
    """A store of the case folder as an older release made it."""
    config = milvus.config()
    store = store_engine(cases, config)
    try:
        store.reindex()
        as_an_older_release_made_it(store.index)
    finally:
        store.stop()
    return config


def test_sharded_workers_each_write_their_share_once_and_the_store_is_whole_after_all(
    milvus: MilvusServer, cases: Path
) -> None:
    config = made_before(milvus, cases)
    first = store_engine(cases, replace(config, shard=(1, 2)))
    second = store_engine(cases, replace(config, shard=(2, 2)))
    first.params = second.params = KEYWORD
    try:
        first.reindex()
        index = first.index
        mine = {p.name for p in cases.glob("*.txt") if in_shard(p.name, (1, 2))}
        assert 0 < len(mine) < 10
        assert set(grams_of(index)) == mine
        assert index.collections.grams_done((1, 2)) and not index.collections.grams_done((2, 2))
        assert not index.collections.grams_whole()
        ids = sorted(
            r["id"]
            for r in index.collections.connect().query(index.collections.grams, filter="id >= 0")
        )
        first.reindex()  # its share is written: not again
        assert (
            sorted(
                r["id"]
                for r in index.collections.connect().query(
                    index.collections.grams, filter="id >= 0"
                )
            )
            == ids
        )
        second.reindex()
        assert index.collections.grams_whole()
        assert sorted(grams_of(index)) == sorted(p.name for p in cases.glob("*.txt"))
    finally:
        first.stop()
        second.stop()


def test_a_stopped_backfill_leaves_no_file_s_rows_twice(milvus: MilvusServer, cases: Path) -> None:
    config = made_before(milvus, cases)
    store = store_engine(cases, config)
    try:
        index = store.index
        index.collections.create(FakeEmbedder().dimension, {})
        known = index.files()
        seen: list[Progress] = []

        def stop_after_two(p: Progress) -> None:
            seen.append(p)
            if len(seen) == 3:
                raise Stopped("the server is stopping")

        with pytest.raises(Stopped):
            write_grams(index, known, None, stop_after_two, batch_files=2)
        assert len(grams_of(index)) == 4 and not index.collections.grams_done(None)
        write_grams(index, known, None, batch_files=3)
        rows = grams_of(index)
        assert sorted(rows) == sorted(known) and all(len(r) == 1 for r in rows.values())
        held = rows["whole.txt"][0].split()
        pairs = [DESCRIPTION[i + j : i + j + 2] for i in range(0, 60, 15) for j in range(14)]
        assert [held.count(pair_word(g)) for g in pairs] == [1] * len(pairs)
        assert index.collections.grams_whole()
    finally:
        store.stop()


def test_a_worker_refused_by_a_store_adds_no_collection_to_it(
    milvus: MilvusServer, cases: Path
) -> None:
    config = made_before(milvus, cases)
    other = store_engine(cases, config, chunk_size=500, chunk_overlap=50)  # another chunking
    try:
        with pytest.raises(StoreMismatch):
            other.reindex()
        assert not other.index.collections.connect().has_collection(other.index.collections.grams)
    finally:
        other.stop()


def test_a_file_longer_than_a_row_is_ranked_whole_as_in_the_embedded_store(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    # long.txt holds the whole description, a half in each of its two grams rows; mid.txt
    # holds the first half in a short text. Milvus's BM25 ranks each row alone, and
    # mid.txt's one row beats either half: the store ranked it first. Scored whole, as
    # the embedded store scores files, long.txt leads.
    data = tmp_path / "docs"
    data.mkdir()
    half = DESCRIPTION[:30] + "。"
    (data / "long.txt").write_text(
        filler(1, 6000) + half + filler(2, 6000) + DESCRIPTION[30:] + "。"
    )
    (data / "mid.txt").write_text(filler(3, 1000) + half + filler(4, 1000))
    for n in range(8):
        (data / f"other{n}.txt").write_text(filler(n * 31, 4400))
    for path in data.iterdir():
        os.utime(path, ns=(10**18, 10**18))
    with both_stores(data, milvus) as (embedded, store):
        assert len(grams_of(store.index)["long.txt"]) == 2
        counts = query_gram_counts(DESCRIPTION)
        rows = store.index.whole_files([pair_word(g) for g in counts], 10)
        assert rows[0][0] == "mid.txt"  # what Milvus proposes first
        assert paths(embedded, DESCRIPTION, 2) == ["long.txt", "mid.txt"]
        assert paths(store, DESCRIPTION) == paths(embedded, DESCRIPTION)
        found = whole_file_hits(
            store.index,
            store.keyword_stats,
            store.file_stats,
            counts,
            10,
            store.index.count_chunks(),
            {},
        )
        assert [p for p, _, _ in found[:2]] == ["long.txt", "mid.txt"]
        # the sample held every file: the scores are FTS5's over files_cjk exactly
        sample = store.file_stats.sample(store.index, store.index.count_chunks())
        assert sample.share == 1 and sample.files == 10
        assert {p: s for p, _, s in found} == pytest.approx(files_cjk_scores(data, counts))


def files_cjk_scores(data: Path, counts: Mapping[str, int]) -> dict[str, float]:
    """The embedded store's whole-file scores of a long CJK query, by path."""
    with closing(Catalog.open_reader(data / "index" / "catalog.sqlite3")) as catalog:
        shares, _ = catalog.terms.shares_among(list(counts), table="chunks_cjk")
        found = catalog.keywords.cjk_file_search(or_query(document_terms(counts, shares)), 100)
        first = catalog.chunks.first_chunks([fid for fid, _ in found])
        chunks = catalog.chunks.fetch(list(first.values()))
        return {chunks[first[fid]].path: score for fid, score in found}


def test_a_pair_s_count_of_files_is_the_sample_s_estimate_or_the_files_read_back() -> None:
    a, b, c = (pair_word(g) for g in ("上海", "北京", "广州"))
    # a tenth of the files sampled: 50 of them with CJK text, two holding a, none b or c
    sample = FileSample(0, 0.1, 50, Counter({a: 2}), 100.0)
    assert sample.files == 500 and sample.holding(a) == 20
    texts = {
        ("x.txt", 1): (100, Counter({a: 1, b: 1, c: 98})),
        ("y.txt", 1): (100, Counter({b: 100})),
        ("z.txt", 1): (50, Counter({c: 50})),
    }
    found = rescored([a, b], texts, list(texts), sample)
    # b is in two of the files read back, so counted in two though the sample saw none:
    # x holds a (20 files of 500) and b once, y holds b a hundred times
    idf_a, idf_b = (math.log((500 - n + 0.5) / (n + 0.5)) for n in (20, 2))
    norm = K1 * (1 - B + B * 100 / 100.0)
    x = idf_a * (K1 + 1) / (1 + norm) + idf_b * (K1 + 1) / (1 + norm)
    y = idf_b * 100 * (K1 + 1) / (100 + norm)
    assert found == [("y.txt", 1, pytest.approx(y)), ("x.txt", 1, pytest.approx(x))]
    assert ("z.txt", 1) not in [(p, v) for p, v, _ in found]  # holds neither: no score


def test_past_its_budget_a_sample_takes_the_files_of_some_buckets_and_ranks_alike(
    milvus: MilvusServer, cases: Path
) -> None:
    with keyword_store(cases, milvus) as store:
        chunks = store.index.count_chunks()
        whole = store.file_stats.sample(store.index, chunks)
        assert whole.share == 1 and whole.files == 10
        # a budget of one pair: the first range of buckets (a fifth) holds it, and no more
        # is read; a budget of twice the files' pairs: a fifth, then at most four times
        # as many buckets again, then the rest
        store.file_stats = FileStats(sample_pairs=1, first_files=2)
        part = store.file_stats.sample(store.index, chunks)
        assert part.share == (BUCKETS * 2 // 10) / BUCKETS and 0 < part.sampled < 10
        assert part.files == part.sampled / part.share
        more = FileStats(sample_pairs=2 * 10 * int(whole.mean), first_files=2)
        assert more.sample(store.index, chunks).share == 1
        assert more.sample(store.index, chunks).having == whole.having
        # the files read back count what the sample missed: the whole file still leads
        assert paths(store, DESCRIPTION, 2) == ["whole.txt", "part.txt"]
        assert store.file_stats.sample(store.index, chunks) is part  # kept while unchanged
