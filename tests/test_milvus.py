"""The Milvus store: the same tools and guarantees as the embedded index, over the network.

Every test runs against one real milvus-lite gRPC server (a subprocess started once for
the module), through pymilvus's network client, each in a collection of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from micro_rag_mcp.core.address import StoreConfig, parse_shard, parse_store_url
from micro_rag_mcp.core.errors import ConfigError, NotIndexed, StoreMismatch
from micro_rag_mcp.core.records import SkipGroup
from micro_rag_mcp.core.settings import ModelName
from micro_rag_mcp.local.answers.search import keyword_candidates, keyword_evidence
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.milvus.engine import MilvusEngine
from micro_rag_mcp.milvus.index import MilvusIndex
from micro_rag_mcp.milvus.keywords import KeywordStats
from micro_rag_mcp.milvus.keywords import keyword_evidence as milvus_keyword_evidence
from micro_rag_mcp.milvus.keywords import keyword_hits as milvus_keyword_hits
from micro_rag_mcp.milvus.shards import in_shard
from micro_rag_mcp.model.choice import AutoLoad
from micro_rag_mcp.model.files import ENCODERS
from micro_rag_mcp.options import store_from_args
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.plan import plan_query
from micro_rag_mcp.search.terms import query_terms
from micro_rag_mcp.serve.main import build_parser, settings_from_args
from tests.fakes import FakeEmbedder
from tests.milvuskit import MilvusServer, free_port, run_halting_worker, store_engine
from tests.settingskit import make_settings

pytestmark = pytest.mark.slow

FILES = {
    "fox.txt": "The quick brown fox jumps over the lazy dog.\n\nFoxes are clever animals.\n",
    "notes/cats.md": "# Cats\n\nCats sleep most of the day. A cat purrs when content.\n",
    "notes/garden.md": "# Garden\n\nTomatoes need six hours of sunlight and regular watering.\n",
    "recipe.txt": "Knead the bread dough for ten minutes, then let it rise in a warm place.\n",
    "ships.txt": "\n".join(
        f"Line {i}: the airship Hindenburg crossed the ocean." for i in range(40)
    ),
}
QUERIES = ["clever fox", "sleeping cats", "tomato sunlight", "bread dough", "Hindenburg ocean"]


def write_folder(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
        os.utime(root / rel, ns=(10**18, 10**18))  # an old stamp: trusted at once
    return root


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return write_folder(tmp_path / "docs", FILES)


def restamp(path: Path, text: str) -> None:
    path.write_text(text)
    os.utime(path, ns=(2 * 10**18, 2 * 10**18))


# -- addresses and shards --------------------------------------------------------------


def test_store_url_names_host_port_database_and_collection() -> None:
    config = parse_store_url("milvus://db.example:19530/team?collection=docs", "secret")
    assert (config.host, config.port, config.database, config.collection) == (
        "db.example",
        19530,
        "team",
        "docs",
    )
    assert "secret" not in repr(config) and "secret" not in config.url
    assert parse_store_url("milvus://h:1?collection=c").database == "default"
    for wrong in (
        "http://h:1/db?collection=c",
        "milvus://h/db?collection=c",
        "milvus://h:1/db",
        "milvus://h:1/db?collection=a-b",
        "milvus://u:p@h:1/db?collection=c",
    ):
        with pytest.raises(ConfigError, match="--store"):
            parse_store_url(wrong)


def test_the_token_comes_from_the_variable_the_flag_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = build_parser().parse_args(
        ["--title", "T", "--inst", "I", "--store", "milvus://h:1/db?collection=c"]
        + ["--store-token-env", "TEAM_MILVUS_TOKEN"]
    )
    monkeypatch.setenv("TEAM_MILVUS_TOKEN", "user:secret")
    config = store_from_args(args)
    assert config is not None and config.token == "user:secret"
    monkeypatch.delenv("TEAM_MILVUS_TOKEN")
    with pytest.raises(ConfigError, match="TEAM_MILVUS_TOKEN is not set"):
        store_from_args(args)
    no_store = build_parser().parse_args(["--title", "T", "--inst", "I"])
    with pytest.raises(ConfigError, match="--data-folder is required"):
        settings_from_args(no_store)
    failed = cli("index", ".", "--shard", "1/2")
    assert failed.returncode == 2 and "--shard applies only with --store" in failed.stderr


def test_shards_split_every_path_to_exactly_one_owner() -> None:
    assert parse_shard("2/3") == (2, 3)
    for wrong in ("0/2", "3/2", "1", "a/b"):
        with pytest.raises(ConfigError, match="--shard"):
            parse_shard(wrong)
    paths = [f"dir{i % 7}/file{i}.txt" for i in range(300)]
    owners = [[p for p in paths if in_shard(p, (i, 3))] for i in (1, 2, 3)]
    assert sorted(sum(owners, [])) == sorted(paths)
    assert all(len(share) > 50 for share in owners)  # a hash spreads them


# -- parity with the embedded store ------------------------------------------------------


def test_search_reindex_and_read_match_the_embedded_store(
    milvus: MilvusServer, folder: Path
) -> None:
    embedded = Engine(make_settings(folder, chunk_size=200, chunk_overlap=40), FakeEmbedder)
    embedded.load_model()
    store = store_engine(folder, milvus.config(), chunk_size=200, chunk_overlap=40)
    try:
        for step in range(3):
            a, b = embedded.reindex(), store.reindex()
            counts = lambda r: (  # noqa: E731
                r.files_added,
                r.files_updated,
                r.files_removed,
                r.files_unchanged,
                r.chunks_total,
            )
            assert counts(a) == counts(b), step
            for query in QUERIES:
                ours, theirs = embedded.search(query, 5), store.search(query, 5)
                assert theirs.notices == ours.notices, query
                assert [h.chunk.path for h in ours.hits][:2] == [h.chunk.path for h in theirs.hits][
                    :2
                ]
                best = {(h.chunk.path, h.chunk.chunk_index): h.score for h in ours.hits}
                for h in theirs.hits:
                    key = (h.chunk.path, h.chunk.chunk_index)
                    if key in best:
                        assert h.score == pytest.approx(best[key], abs=1e-5)
            for rel in sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.*")):
                if "index" in rel.split("/"):
                    continue
                assert store.read(rel) == embedded.read(rel), rel
            assert store.read("ships.txt", char_start=300, char_end=700) == embedded.read(
                "ships.txt", char_start=300, char_end=700
            )
            if step == 0:  # then: one file changed, one gone, one new
                restamp(folder / "recipe.txt", "Whisk the eggs with sugar until pale.")
                (folder / "notes/garden.md").unlink()
                restamp(folder / "new.md", "# Moon\n\nThe moon orbits the earth.")
        assert store.state().files_indexed == 5
        assert "notes/garden.md" not in {h.chunk.path for h in store.search("tomato").hits}
    finally:
        embedded.stop()
        store.stop()


def test_a_failed_file_is_counted_failed_not_also_unchanged_as_in_the_embedded_store(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    folder = write_folder(tmp_path / "docs", {"a.md": "Apples grow in the orchard."})
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    os.utime(folder / "broken.pdf", ns=(10**18, 10**18))
    embedded = Engine(make_settings(folder), FakeEmbedder)
    embedded.load_model()
    store = store_engine(folder, milvus.config())
    try:
        for want in [(1, 0), (0, 1), (0, 1)]:
            for report in (embedded.reindex(), store.reindex()):
                assert (report.files_added, report.files_unchanged) == want
                assert [p for p, _ in report.files_failed] == ["broken.pdf"]
    finally:
        embedded.stop()
        store.stop()


def test_another_inflection_of_a_word_matches_by_keyword_as_in_the_embedded_store(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    data = write_folder(
        tmp_path / "docs",
        {
            "runner.txt": "She runs along the river before work.\n",
            "cats.txt": "Cats sleep most of the day.\n",
            "garden.txt": "Tomatoes need six hours of sunlight.\n",
        },
    )
    with keyword_engines(data, milvus.config()) as (embedded, store):
        for query in ("running", "sleeping cat", "tomato hour"):
            ours, theirs = embedded.search(query, 5, -1.0), store.search(query, 5, -1.0)
            assert [h.chunk.path for h in theirs.hits] == [h.chunk.path for h in ours.hits]
            assert len(theirs.hits) == 1, query
        assert store.read("runner.txt").text.startswith("She runs along")  # stored as written


@contextmanager
def keyword_engines(data: Path, config: StoreConfig) -> Iterator[tuple[Engine, MilvusEngine]]:
    """The folder indexed in both stores, each searching by keyword only."""
    keyword_only = SearchParams(channels=("keyword",))
    embedded = Engine(make_settings(data), FakeEmbedder, keyword_only)
    embedded.load_model()
    store = store_engine(data, config)
    store.params = keyword_only
    try:
        embedded.reindex()
        store.reindex()
        yield embedded, store
    finally:
        embedded.stop()
        store.stop()


Channels = Callable[[str], tuple[dict[str, float], list[tuple[str, float]]]]
Weights = Callable[[str], tuple[float, float]]


@contextmanager
def keyword_channels(data: Path, config: StoreConfig, stats: KeywordStats) -> Iterator[Channels]:
    """The folder indexed in both stores; yields a function asking each keyword channel
    directly: the embedded store's scores by path, and the store's (path, score) in order."""
    with keyword_evidence_of(data, config, stats) as (both, _):
        yield both


@contextmanager
def keyword_evidence_of(
    data: Path, config: StoreConfig, stats: KeywordStats
) -> Iterator[tuple[Channels, Weights]]:
    """``keyword_channels``, and a function giving what a query weighs on each store (the
    summed idf ``no_good_match`` measures the best score against): the embedded store's,
    then the store's."""
    params = SearchParams(channels=("keyword",))
    embedded = Engine(make_settings(data), FakeEmbedder, params)
    embedded.load_model()
    store = store_engine(data, config)
    try:
        embedded.reindex()
        store.reindex()
        index = MilvusIndex(config)
        with closing(Catalog.open_reader(data / "index" / "catalog.sqlite3")) as catalog:

            def both(query: str) -> tuple[dict[str, float], list[tuple[str, float]]]:
                found, _ = keyword_candidates(catalog, query, params)
                ids = [cid for cid, _ in found]
                paths = {cid: c.path for cid, c in catalog.chunks.fetch(ids).items()}
                hits = milvus_keyword_hits(index, stats, query_terms(query), [], params.depth)
                return {paths[c]: s for c, s in found}, [(h.path, h.score) for h in hits]

            def weights(query: str) -> tuple[float, float]:
                _, ours = keyword_evidence(catalog, plan_query(query, params), params)
                terms = query_terms(query)
                _, theirs = milvus_keyword_evidence(index, stats, terms, [], params.depth)
                return ours, theirs

            yield both, weights
    finally:
        embedded.stop()
        store.stop()


def quarterly_reports(
    lines: dict[str, Callable[[int], bool]], *, filler: bool = False
) -> dict[str, str]:
    """Thirty files, each "Quarterly report." and the lines whose test takes its number
    (with ``filler``, then up to five lines of filler)."""
    return {
        f"f{i:02}.txt": " ".join(
            ["Quarterly report."]
            + [line for line, holds in lines.items() if holds(i)]
            + ["Filler words about nothing much."] * (i % 6 if filler else 0)
        )
        for i in range(30)
    }


def test_keyword_scores_are_the_embedded_stores_bm25_for_rare_middling_and_common_words(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    # "report" is in every file (FTS5 gives it no weight: it is left out), "revenue" in a
    # third of them (Lucene's idf weighs it far more than FTS5's), the rest are rarer.
    lines = {
        "Revenue grew again this quarter, revenue everywhere.": lambda i: i % 3 == 0,
        "The Intel foundry lost money.": lambda i: i % 5 == 0,
        "Inventory of wafers rose sharply.": lambda i: i % 4 == 1,
    }
    data = write_folder(tmp_path / "docs", quarterly_reports(lines, filler=True))
    with keyword_channels(data, milvus.config(), KeywordStats()) as both:
        for query in ("intel revenue report", "revenue inventory", "report", "wafers intel"):
            expected, got = both(query)
            assert len(expected) >= 6, query
            assert dict(got) == pytest.approx(expected, rel=1e-6), query


def test_a_query_weighs_the_same_on_both_stores_even_with_two_words_of_one_stem(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    # "connect" and "connection" are one stem: two terms on both stores, each weighing it
    lines = {
        "Connect the wafers, then test the connection.": lambda i: i % 4 == 0,
        "The Intel foundry lost money.": lambda i: i % 5 == 0,
    }
    data = write_folder(tmp_path / "docs", quarterly_reports(lines))
    with keyword_evidence_of(data, milvus.config(), KeywordStats()) as (_, weights):
        for query in ("connect connection intel", "intel wafers", "report", "connect"):
            ours, theirs = weights(query)
            assert theirs == pytest.approx(ours, rel=1e-6), query
        ours, _ = weights("connect connection intel")
        assert ours > weights("connect intel")[0]  # the stem weighs twice on both


def test_words_no_chunk_holds_weigh_alike_on_both_stores_when_they_outweigh_the_rest(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    lines = {
        "Zinc and copper alloys.": lambda i: i % 10 == 0,
        "The Intel foundry lost money.": lambda i: i % 5 == 0,
    }
    data = write_folder(tmp_path / "docs", quarterly_reports(lines))
    with keyword_evidence_of(data, milvus.config(), KeywordStats()) as (_, weights):
        for query in ("zinc copper alloys zeppelin", "intel zeppelin walrus", "zinc copper"):
            ours, theirs = weights(query)
            assert theirs == pytest.approx(ours, rel=1e-6), query
        # "zeppelin" is in no chunk: it weighs nothing beside three rarer words held...
        held = weights("zinc copper alloys")
        assert weights("zinc copper alloys zeppelin") == pytest.approx(held, rel=1e-6)
        # ...and counts, with "walrus", against "intel" alone.
        assert weights("intel zeppelin walrus")[1] > 2 * weights("intel")[1]


def test_a_servers_own_reindex_counts_words_again_at_the_same_chunk_count(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    # Five files trade "beta" for "alpha": the chunk count stays, alpha's count grows.
    data = write_folder(
        tmp_path / "docs",
        {
            f"f{i:02}.txt": ("alpha" if i < 10 else "beta") + f" gamma{i % 3} w{i}"
            for i in range(30)
        },
    )
    keyword_only = SearchParams(channels=("keyword",))
    embedded = Engine(make_settings(data), FakeEmbedder, keyword_only)
    embedded.load_model()
    store = store_engine(data, milvus.config())
    store.params = keyword_only

    def fused(engine: Engine | MilvusEngine) -> dict[str, float]:
        return {h.chunk.path: h.fused for h in engine.search("alpha gamma0", 30, -1.0).hits}

    try:
        for step in range(2):
            embedded.reindex()
            store.reindex()
            expected = fused(embedded)
            assert len(expected) == (16 if step == 0 else 20)  # alpha or gamma0
            assert fused(store) == pytest.approx(expected, rel=1e-6), step
            for i in range(10, 15):
                restamp(data / f"f{i:02}.txt", f"alpha gamma{i % 3} w{i}")
    finally:
        embedded.stop()
        store.stop()


def test_both_stores_tell_the_entries_their_scans_skip(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    data = write_folder(tmp_path / "docs", {"a.txt": "alpha beta"})
    os.mkfifo(data / "pipe.txt")
    embedded = Engine(make_settings(data), FakeEmbedder)
    embedded.load_model()
    store = store_engine(data, milvus.config())
    try:
        embedded.reindex()
        store.reindex()
        expected = (SkipGroup("not a regular file", 1, ("pipe.txt",)),)
        assert store.state().skipped == embedded.state().skipped == expected
        assert store.status().skipped == embedded.status().skipped == expected
    finally:
        embedded.stop()
        store.stop()


def test_past_the_sample_size_keyword_scores_come_from_a_sample_and_the_candidates(
    milvus: MilvusServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 600 one-chunk files of equal length; "common" in 80 % (left out), "middling" in
    # 25 %, "rare" in three (too rare for a sample of ~180: counted in the candidates).
    def text(i: int) -> str:
        marks = ["common" if i % 5 else "other", "middling" if i % 4 == 0 else "another"]
        marks.append("rare" if i in (8, 124, 457) else "plain")
        return " ".join(marks + [f"w{i}x{j}" for j in range(9)])

    data = write_folder(tmp_path / "docs", {f"f{i:03}.txt": text(i) for i in range(600)})
    config, stats = milvus.config(), KeywordStats(sample_rows=200)
    with keyword_channels(data, config, stats) as both:
        sample = stats.sample(MilvusIndex(config), 600)
        assert not sample.whole and 100 < sample.rows < 200
        expected, got = both("rare")
        assert dict(got) == pytest.approx(expected, rel=0.05)
        expected, got = both("common middling rare")
        first = [p for p, _ in got[:3]]  # rare and middling (a tie), then rare alone
        assert sorted(first[:2]) == ["f008.txt", "f124.txt"] and first[2] == "f457.txt"
        assert len(got) == len(expected) == 151  # 150 middling, 1 rare alone; not "common"
        # "middling" is counted in ~180 sampled chunks: its share is off by about 0.03
        # (one standard error), its idf by about 15 %.
        assert dict(got) == pytest.approx(expected, rel=0.2)
        assert both("middling rare")[1] == got  # "common" weighs nothing on either store


def test_a_cjk_run_inside_a_passage_is_found_by_keyword_as_in_the_embedded_store(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    data = write_folder(
        tmp_path / "docs",
        {
            "zh.txt": "北京大学的图书馆藏有许多古籍。研究人员每天都来查阅资料。",
            "ja.md": "# 報告\n\n東京都庁の職員は毎朝九時に会議を開きます。",
            "ko.txt": "서울특별시청은 매일 아침 회의를 엽니다.",
            "mixed.txt": "The Shinkansen から見た富士山 was beautiful at dawn.",
            "en.txt": "Ordinary English text about libraries and meetings.",
        },
    )
    store = store_engine(data, milvus.config())
    store.params = SearchParams(channels=("keyword",))
    try:
        store.reindex()
        expected = {
            "图书馆": "zh.txt",
            "古籍": "zh.txt",  # inside a run, not at its start
            "都庁": "ja.md",
            "会議": "ja.md",
            "회의를": "ko.txt",
            "富士山 Shinkansen": "mixed.txt",
        }
        for query, path in expected.items():
            assert [h.chunk.path for h in store.search(query, 5, -1.0).hits][:1] == [path], query
        assert store.search("東", 5, -1.0).hits == []  # one character is no run
    finally:
        store.stop()


@pytest.mark.parametrize("suffix", [".py", ".txt"])  # code known by its suffix, or its text
def test_code_is_ranked_as_in_the_embedded_store(
    milvus: MilvusServer, tmp_path: Path, suffix: str
) -> None:
    files = {
        f"util_{i:02d}{suffix}": f"def helper_{i}(value, items):\n    # value list value list\n"
        f"    return [value for value in items if value != {i}]\n"
        for i in range(8)
    }
    files[f"sort_by_value{suffix}"] = (
        "def sort_dict_by_value(mapping):\n    # sort a dict by value, largest first\n"
        "    return dict(sorted(mapping.items(), key=lambda kv: kv[1], reverse=True))\n"
    )
    files["notes.md"] = "# Values\n\nA value list: value, list, value, list."
    data = write_folder(tmp_path / "docs", files)
    exts = (".md", suffix)
    embedded = Engine(make_settings(data, exts=exts), FakeEmbedder)
    embedded.load_model()
    store = store_engine(data, milvus.config(), exts=exts)
    try:
        embedded.reindex()
        store.reindex()
        for query in ("sort a dict by value list", "helper_3 value", "value list"):
            ours = [(h.chunk.path, h.fused) for h in embedded.search(query, 10, -1.0).hits]
            theirs = [(h.chunk.path, h.fused) for h in store.search(query, 10, -1.0).hits]
            assert [p for p, _ in ours] == [p for p, _ in theirs], query
            assert [r for _, r in ours] == pytest.approx([r for _, r in theirs], abs=1e-5)
        assert embedded.search("helper_3 value", 1, -1.0).hits[0].chunk.path == f"util_03{suffix}"
        # and the treatment is what made the ranking: code as prose is ranked otherwise
        query = "sort a dict by value list"
        judged = [(h.chunk.path, round(h.fused, 3)) for h in store.search(query, 10, -1.0).hits]
        store.params = SearchParams(judge_code=False)
        plain = [(h.chunk.path, round(h.fused, 3)) for h in store.search(query, 10, -1.0).hits]
        assert plain != judged
    finally:
        embedded.stop()
        store.stop()


def test_in_a_mostly_english_folder_cjk_pairs_are_chosen_as_in_the_embedded_store(
    milvus: MilvusServer, tmp_path: Path
) -> None:
    # 图书 is in three of the four Chinese notes: common among them, rare in the folder.
    files = {
        f"en_{i:02d}.txt": f"ordinary english note number {i} about libraries" for i in range(40)
    }
    files |= {
        "zh_a.txt": "图书馆藏有许多古籍。",
        "zh_b.txt": "图书馆的报纸每天更新。",
        "zh_c.txt": "图书馆的杂志很多。",
        "zh_d.txt": "市政厅的会议报告。",
    }
    data = write_folder(tmp_path / "docs", files)
    embedded = Engine(make_settings(data), FakeEmbedder)
    embedded.load_model()
    store = store_engine(data, milvus.config())
    embedded.params = store.params = SearchParams(channels=("keyword",))
    try:
        embedded.reindex()
        store.reindex()
        expected = {
            "图书馆古籍": ["zh_a.txt"],  # the common pairs left out, the rare ones decide
            "图书报纸": ["zh_b.txt"],
            "图书 libraries": ["zh_c.txt", "zh_a.txt", "zh_b.txt"],  # only common pairs: all
        }
        for query, paths in expected.items():
            ours = [h.chunk.path for h in embedded.search(query, 10, -1.0).hits]
            theirs = [h.chunk.path for h in store.search(query, 10, -1.0).hits]
            assert ours == theirs == paths, query
    finally:
        embedded.stop()
        store.stop()


def test_read_needs_no_copy_of_the_folder(milvus: MilvusServer, folder: Path) -> None:
    config = milvus.config()
    writer = store_engine(folder, config)
    writer.reindex()
    reader = MilvusEngine(
        make_settings(folder.parent / "elsewhere"), FakeEmbedder, config, folder=None
    )
    passage = reader.read("notes/cats.md")
    assert passage.text == FILES["notes/cats.md"].rstrip("\n")
    assert passage.notices == []
    hits = reader.search("cats purr").hits
    assert hits and hits[0].chunk.path == "notes/cats.md"
    with pytest.raises(Exception, match="no data folder"):
        reader.reindex()


# -- atomic per file ---------------------------------------------------------------------


EN = ("alpha bravo charlie", "yankee zulu xray")
ZH = ("图书馆收藏古籍善本", "报纸杂志期刊订阅")


def visible_state(engine: MilvusEngine, rel: str, old: str, new: str) -> str:
    """ "old" or "new": what read and search show of one file, checked to be one whole."""
    text = engine.read(rel, max_chars=50_000).text
    assert text in (old.rstrip("\n"), new.rstrip("\n")), f"{rel} shows a mix: {text[:80]!r}"
    state = "old" if text == old.rstrip("\n") else "new"
    for query in (old.split()[0], new.split()[0]):  # "alpha", or a run of CJK text
        for hit in engine.search(query, 50, 0.0).hits:
            if hit.chunk.path == rel:
                assert hit.chunk.text in (old if state == "old" else new), (rel, state)
    return state


@pytest.mark.parametrize(
    ("step", "n", "batch", "new_seen", "words"),
    [
        ("after-intent", 1, 64, 0, EN),  # every row notes its new version, no chunk is in
        ("after-intent", 2, 1, 1, EN),  # the first file written, the second noted
        ("mid-insert", 1, 64, 0, EN),  # half of one batch's chunks are in
        ("after-insert", 2, 1, 1, EN),  # the second file's chunks are in, not yet current
        ("after-insert", 2, 1, 1, ZH),  # ... and its grams rows
        ("after-flip", 1, 1, 1, EN),  # the first file is current, its old chunks still there
        ("after-flip", 3, 1, 3, EN),
        ("after-flip", 1, 64, 4, EN),  # every file flipped in one request, none cleaned up
        ("after-flip", 1, 64, 4, ZH),  # ... nor any file's old grams rows
    ],
)
def test_a_killed_worker_leaves_each_file_old_or_new_never_both(
    milvus: MilvusServer,
    tmp_path: Path,
    step: str,
    n: int,
    batch: int,
    new_seen: int,
    words: tuple[str, str],
) -> None:
    old = {f"f{i}.txt": " ".join([words[0]] * 40) + f" file {i}" for i in range(4)}
    new = {f"f{i}.txt": " ".join([words[1]] * 40) + f" file {i}" for i in range(4)}
    data = write_folder(tmp_path / "docs", old)
    url = milvus.url()
    engine = store_engine(data, parse_store_url(url), chunk_size=200, chunk_overlap=40)
    engine.reindex()
    for rel, text in new.items():
        restamp(data / rel, text)
    run_halting_worker(data, url, step, n, batch)
    states = [visible_state(engine, rel, old[rel], new[rel]) for rel in old]
    assert states.count("new") == new_seen
    report = engine.reindex()  # a re-run finishes the job and clears what was left
    assert report.files_updated == states.count("old")
    for rel in old:
        assert visible_state(engine, rel, old[rel], new[rel]) == "new"
        current = engine.index.file_rows([rel])[rel].version
        assert engine.index.versions_of(rel) == {current}
        grams = {current} if words is ZH else set()  # a file with CJK text has its pairs
        assert engine.index.versions_of(rel, grams=True) == grams


@pytest.mark.parametrize("step", ["after-intent", "mid-insert", "after-insert"])
def test_a_worker_killed_before_its_first_flip_leaves_new_files_unseen_then_cleared(
    milvus: MilvusServer, tmp_path: Path, step: str
) -> None:
    texts = {f"f{i}.txt": " ".join(["alpha bravo charlie"] * 40) + f" file {i}" for i in range(4)}
    data = write_folder(tmp_path / "docs", texts)
    url = milvus.url()
    run_halting_worker(data, url, step, 1, 1000)  # new files noted, chunks in or not
    engine = store_engine(data, parse_store_url(url), chunk_size=200, chunk_overlap=40)
    assert (engine.index.count_chunks() > 0) == (step != "after-intent")
    assert engine.search("alpha bravo").hits == []  # a file not yet flipped is never shown
    assert engine.status().files_indexed == engine.state().files_indexed == 0
    with pytest.raises(NotIndexed):
        engine.read("f1.txt")
    (data / "f0.txt").unlink()  # gone before the next pass: nothing of it may stay
    report = engine.reindex()
    assert (report.files_added, report.files_removed) == (3, 0)
    assert engine.index.file_rows(["f0.txt"]) == {}
    assert engine.index.versions_of("f0.txt") == set()
    for rel in sorted(texts)[1:]:
        current = engine.index.file_rows([rel])[rel].version
        assert engine.index.versions_of(rel) == {current}  # the strays are gone
    assert engine.status().files_indexed == engine.state().files_indexed == 3


def test_a_pass_over_new_files_deletes_nothing(milvus: MilvusServer, tmp_path: Path) -> None:
    """A delete by filter reads every row on milvus-lite: only a noted write may cost one."""
    texts = {f"f{i}.txt": " ".join(["alpha bravo charlie"] * 40) + f" file {i}" for i in range(6)}
    data = write_folder(tmp_path / "docs", texts)
    engine = store_engine(data, milvus.config(), chunk_size=200, chunk_overlap=40)
    engine.batch_chunks = 8
    deletes: list[str] = []
    index_delete = MilvusIndex.delete_strays

    def counted(self: MilvusIndex, paths: Sequence[tuple[str, int]]) -> None:
        deletes.extend(p for p, _ in paths)
        index_delete(self, paths)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(MilvusIndex, "delete_strays", counted)
        assert engine.reindex().files_added == 6
        assert deletes == []
        restamp(data / "f2.txt", " ".join(["yankee zulu xray"] * 40))
        assert engine.reindex().files_updated == 1
        assert deletes == ["f2.txt"]  # the replaced version, and only that file's
    assert engine.read("f2.txt").text.startswith("yankee zulu")


# -- many workers, and servers beside them ----------------------------------------------


def test_two_workers_on_disjoint_shards_cover_the_folder(
    milvus: MilvusServer, folder: Path
) -> None:
    config = milvus.config()
    workers = [store_engine(folder, milvus.config(config.collection, shard=(i, 2))) for i in (1, 2)]
    reports = [None, None]

    def run(i: int) -> None:
        reports[i] = workers[i].reindex()  # type: ignore[call-overload]

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    added = [r.files_added for r in reports]  # type: ignore[union-attr]
    assert sum(added) == len(FILES) and all(added)
    assert set(workers[0].index.files()) == set(FILES)
    again = [w.reindex() for w in workers]
    assert [r.files_unchanged for r in again] == added
    (folder / "fox.txt").unlink()
    owner = 0 if in_shard("fox.txt", (1, 2)) else 1
    removed = [w.reindex().files_removed for w in workers]
    assert removed[owner] == 1 and removed[1 - owner] == 0
    assert "fox.txt" not in workers[0].index.files()


def test_a_worker_is_sent_only_the_file_rows_of_its_share(
    milvus: MilvusServer, folder: Path
) -> None:
    config = milvus.config()
    store_engine(folder, config).reindex()
    index = MilvusIndex(config)
    for n in (2, 3):
        shares = [set(index.files(shard=(i, n))) for i in range(1, n + 1)]
        assert shares == [{p for p in FILES if in_shard(p, (i, n))} for i in range(1, n + 1)]
    assert set(index.files("ok", (1, 1))) == set(FILES)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "micro_rag_mcp.cli.app", *args], capture_output=True, text=True
    )


def test_a_server_and_a_worker_side_by_side_with_the_real_model(
    milvus: MilvusServer, folder: Path
) -> None:
    url = milvus.url()
    done = cli("index", str(folder), "--store", url, "--shard", "1/1")
    assert done.returncode == 0, done.stderr
    status = cli("status", str(folder), "--store", url)
    assert "not known" in status.stdout and f"{len(FILES)} indexed" in status.stdout
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "micro_rag_mcp", "--title", "Docs", "--inst", "Search.", "--store", url],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )

    async def main() -> None:
        async with Client(params) as client:
            out = await client.call_tool("search", {"query": "how long to knead dough"})
            result = out.structured_content
            assert result["results"][0]["path"] == "recipe.txt"  # type: ignore[index]
            assert result["index"]["files_indexed"] == len(FILES)  # type: ignore[index]
            top = result["results"][0]  # type: ignore[index]
            read = await client.call_tool(
                "read",
                {"path": top["path"], "char_start": top["char_start"], "char_end": top["char_end"]},
            )
            assert "Knead the bread dough" in read.structured_content["text"]  # type: ignore[index]
            refused = await client.call_tool("reindex", {})
            assert refused.is_error and "no data folder" in str(refused.content)

            restamp(folder / "recipe.txt", "Whisk the eggs with sugar until pale and fluffy.")
            again = cli("index", str(folder), "--store", url)  # a worker, while serving
            assert again.returncode == 0, again.stderr
            out = await client.call_tool("search", {"query": "whisk eggs and sugar"})
            hits = out.structured_content["results"]  # type: ignore[index]
            assert hits[0]["path"] == "recipe.txt" and "Whisk" in hits[0]["snippet"]
            out = await client.call_tool("search", {"query": "knead bread dough", "top_k": 10})
            assert all("Knead" not in h["snippet"] for h in out.structured_content["results"])  # type: ignore[index]

    anyio.run(main)


# -- refusals ------------------------------------------------------------------------------


def test_counts_that_take_long_are_reused_the_longer(
    milvus: MilvusServer, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A count that takes 1 s is reused for 20 s, not 5: on a store that counts by
    reading every row, counting every 5 s would take most of its time from searches."""
    clock = [1000.0]
    engine = store_engine(folder, milvus.config(), clock=lambda: clock[0])
    engine.reindex()
    calls = []
    count_files = engine.index.count_files

    def slow_count() -> tuple[int, int]:
        calls.append(clock[0])
        clock[0] += 1.0  # this count takes a second
        return count_files()

    monkeypatch.setattr(engine.index, "count_files", slow_count)
    assert engine.state().files_indexed == len(FILES)
    clock[0] += 15.0
    engine.state()
    assert len(calls) == 1  # 16 s after: still the first counts
    clock[0] += 6.0
    assert engine.state().files_indexed == len(FILES)
    assert len(calls) == 2  # 22 s after: counted again
    engine.reindex()
    engine.state()
    assert len(calls) == 3  # a pass of the server's own shows at once


def test_a_restarted_milvus_lite_server_is_searched_again_with_nothing_to_redo(
    tmp_path: Path, folder: Path
) -> None:
    server = MilvusServer(tmp_path / "milvus")
    server.folder.mkdir()
    server.start()
    try:
        engine = store_engine(folder, server.config())
        engine.reindex()
        before = [(h.chunk.path, h.chunk.text) for h in engine.search("bread dough").hits]
        assert before
        server.stop()
        server.start()  # milvus-lite comes back with every collection released
        outcome = engine.search("bread dough")
        assert outcome.notices == []
        assert [(h.chunk.path, h.chunk.text) for h in outcome.hits] == before
        assert engine.read("recipe.txt").text.startswith("Knead the bread dough")
        assert engine.reindex().files_unchanged == len(FILES)
    finally:
        server.stop()


def test_an_unreachable_store_is_one_sentence_at_start_and_a_notice_in_search(
    tmp_path: Path,
) -> None:
    url = f"milvus://127.0.0.1:{free_port()}/default?collection=docs"
    started = subprocess.run(
        [sys.executable, "-m", "micro_rag_mcp", "--title", "T", "--inst", "I", "--store", url],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert started.returncode == 1
    assert started.stderr.strip().count("\n") == 0 and "cannot be reached" in started.stderr
    assert "Traceback" not in started.stderr
    engine = MilvusEngine(make_settings(tmp_path), FakeEmbedder, parse_store_url(url))
    engine.load_model()
    outcome = engine.search("anything")
    assert outcome.hits == [] and any("cannot be reached" in n for n in outcome.notices)
    failed = cli("search", str(tmp_path), "anything", "--store", url)
    assert failed.returncode == 1 and "cannot be reached" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_a_store_made_with_another_model_or_chunking_is_refused(
    milvus: MilvusServer, folder: Path
) -> None:
    config = milvus.config()
    store_engine(folder, config).reindex()
    other_model = store_engine(folder, config, FakeEmbedder(model_id="another-model"))
    with pytest.raises(StoreMismatch, match="another-model"):
        other_model.reindex()
    with pytest.raises(StoreMismatch, match="vector_space"):
        other_model.search("fox")
    other_chunks = store_engine(folder, config, chunk_size=300)
    with pytest.raises(StoreMismatch, match="chunking"):
        other_chunks.reindex()
    assert MilvusIndex(config).count_files() == (len(FILES), 0)  # nothing was mixed in


@pytest.mark.parametrize(
    "keywords",
    [None, "porter-unicode61-1;cjk-bigram-words-1"],
    ids=["unstemmed", "without-word-counts"],
)
def test_a_store_with_keywords_laid_out_otherwise_is_refused_not_mixed(
    milvus: MilvusServer, folder: Path, keywords: str | None
) -> None:
    config = milvus.config()
    engine = store_engine(folder, config)
    made_before = {k: v for k, v in engine.identity(FakeEmbedder()).items() if k != "keywords"}
    if keywords is not None:
        made_before["keywords"] = keywords
    MilvusIndex(config).collections.create(FakeEmbedder().dimension, made_before)
    with pytest.raises(StoreMismatch, match="another release .* keywords"):
        engine.reindex()
    with pytest.raises(StoreMismatch, match="another release"):
        store_engine(folder, config).search("fox")
    assert MilvusIndex(config).count_chunks() == 0


# -- the encoder of --model auto -----------------------------------------------------------


def test_auto_takes_the_encoder_the_collection_recorded_else_minilm(
    milvus: MilvusServer, folder: Path
) -> None:
    loads: list[str] = []

    def load(encoder: ModelName) -> FakeEmbedder:
        loads.append(encoder)
        return FakeEmbedder(model_id=f"{ENCODERS[encoder].model_name}@fake")

    fresh = MilvusEngine(make_settings(folder), AutoLoad(load), milvus.config(), folder=folder)
    fresh.load_model()
    assert loads == ["minilm"]  # a store is shared by folders of any language
    made_by_e5 = milvus.config()
    e5 = FakeEmbedder(model_id=f"{ENCODERS['e5-small'].model_name}@fake")
    writer = MilvusEngine(
        make_settings(folder, model="e5-small"), lambda: e5, made_by_e5, folder=folder
    )
    writer.reindex()
    reader = MilvusEngine(make_settings(folder), AutoLoad(load), made_by_e5, folder=folder)
    reader.load_model()
    assert loads == ["minilm", "e5-small"]
    assert reader.search("clever fox").hits[0].score is not None  # the vectors are usable
