"""A long CJK query on a Milvus store is matched against whole files, as embedded.

The store keeps each file's pairs in its grams collection (``rows.gram_rows``), under the
file's version as its chunks are; a store made before that collection gets its rows at
its next pass. Against one real milvus-lite server, started once for the module.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from micro_rag_mcp.core.address import StoreConfig
from micro_rag_mcp.core.errors import Stopped, StoreMismatch
from micro_rag_mcp.core.results import Progress
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.milvus.cjk_words import pair_word
from micro_rag_mcp.milvus.engine import MilvusEngine
from micro_rag_mcp.milvus.index import FILES_LAYOUT, MilvusIndex
from micro_rag_mcp.milvus.rows import gram_rows
from micro_rag_mcp.milvus.shards import in_shard
from micro_rag_mcp.milvus.sync import write_grams
from micro_rag_mcp.search.fusion import SearchParams
from tests.cjkkit import DESCRIPTION, write_case_folder
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
