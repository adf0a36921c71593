"""Scoped search: path globs, a modification-time range and file types, inside both channels."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import Client

from micro_rag_mcp.core.errors import InvalidArgument
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.vectors.queries import SUBSET_EXACT
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.scope import parse_scope, parse_time
from tests.mcpkit import run_client

DAY = 86_400 * 10**9


def _folder(data: Path) -> None:
    """Ten strong matches in ``loud/``, ten weaker ones in ``quiet/``, of two types."""
    for i in range(10):
        (data / "loud").mkdir(exist_ok=True)
        (data / "quiet").mkdir(exist_ok=True)
        (data / "loud" / f"l{i}.md").write_text(f"Comets comets comets and comet tails {i}.")
        (data / "quiet" / f"q{i}.txt").write_text(f"A note {i} that mentions a comet once.")


def _paths(engine: Engine, **scope: Any) -> list[str]:
    outcome = engine.search("comet tails", 5, 0.0, parse_scope(**scope))
    return [h.chunk.path for h in outcome.hits]


def test_a_path_glob_keeps_to_its_files_and_still_fills_top_k(engine: Engine, data: Path) -> None:
    _folder(data)
    engine.reindex()
    assert all(p.startswith("loud/") for p in _paths(engine))  # the unscoped best
    quiet = _paths(engine, path_glob="quiet")
    assert len(quiet) == 5 and all(p.startswith("quiet/") for p in quiet)
    some = _paths(engine, path_glob=["quiet/q1.txt", "loud/l2.*"])
    assert sorted(some) == ["loud/l2.md", "quiet/q1.txt"]


def test_file_types_take_suffixes_and_groups(engine: Engine, data: Path) -> None:
    _folder(data)
    (data / "tool.py").write_text("# comet tails are computed here\n")
    engine.reindex()
    assert set(_paths(engine, file_types=["txt"])) <= {f"quiet/q{i}.txt" for i in range(10)}
    assert len(_paths(engine, file_types=[".txt"])) == 5
    assert _paths(engine, file_types=["code"]) == []  # .py is not indexed by default


def test_modified_after_and_before_keep_to_the_range(engine: Engine, data: Path) -> None:
    _folder(data)
    old = parse_time("t", "2020-01-01")
    assert old is not None
    for i in range(10):
        os.utime(data / "loud" / f"l{i}.md", ns=(old, old))
    engine.reindex()
    recent = _paths(engine, modified_after="2021-06-30T12:00:00+02:00")
    assert len(recent) == 5 and all(p.startswith("quiet/") for p in recent)
    before = _paths(engine, modified_before="2020-01-02")
    assert len(before) == 5 and all(p.startswith("loud/") for p in before)
    assert _paths(engine, modified_after="2020-01-01", modified_before="2020-01-01T00:00:01") != []
    assert _paths(engine, modified_after="2020-01-01T00:00:01Z", modified_before="2020-12-31") == []


def test_a_scope_that_matches_no_file_says_so(engine: Engine, data: Path) -> None:
    _folder(data)
    engine.reindex()
    outcome = engine.search("comet", 5, 0.0, parse_scope(path_glob="nowhere/**"))
    assert outcome.hits == []
    assert any("matches no indexed file" in n and '"nowhere/**"' in n for n in outcome.notices)
    assert not any('"["' in n for n in outcome.notices)


def test_a_process_that_searched_nothing_counts_the_saved_vectors(
    engine: Engine, data: Path
) -> None:
    """A fresh process (the CLI's) whose scope matches no file, or that searches by
    keyword alone, never loads the vectors: it counts them in the saved file."""
    from tests.fakes import FakeEmbedder
    from tests.settingskit import make_settings

    _folder(data)
    engine.reindex()
    for params in (None, SearchParams(channels=("keyword",))):
        fresh = Engine(make_settings(data), FakeEmbedder, params=params)
        fresh.load_model()
        try:
            scope = parse_scope(path_glob="nowhere/**") if params is None else None
            outcome = fresh.search("comet", 5, 0.0, scope)
            assert outcome.state.chunks_with_vectors == outcome.state.chunks_total == 20
            assert not any("no vector yet" in n for n in outcome.notices)
        finally:
            fresh.stop()
    # Saved by another model, they are no vectors of this one's.
    other = Engine(make_settings(data), lambda: FakeEmbedder(dimension=32, model_id="other-32"))
    other.load_model()
    try:
        state = other.search("comet", 5, 0.0, parse_scope(path_glob="nowhere/**")).state
        assert (state.chunks_with_vectors, state.chunks_total) == (0, 20)
    finally:
        other.stop()


def test_a_changed_scope_is_told_by_what_changed(
    engine: Engine, data: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.fakes import FakeEmbedder
    from tests.settingskit import make_settings

    _folder(data)
    engine.reindex()
    engine.stop()
    narrower = Engine(make_settings(data, exts=(".md",), exclude=("drafts/",)), FakeEmbedder)
    narrower.load_model()
    try:
        with caplog.at_level("WARNING"):
            assert narrower.reindex().files_removed == 10
    finally:
        narrower.stop()
    said = [r.getMessage() for r in caplog.records if "scope changed" in r.getMessage()]
    assert len(said) == 1 and len(said[0]) < 200, said
    assert "exclude +drafts/; exts -.txt, " in said[0] and "more" in said[0]
    for exts in ((".md", ".txt"), (".txt", ".md")):
        caplog.clear()
        again = Engine(make_settings(data, exts=exts), FakeEmbedder)
        again.load_model()
        try:
            with caplog.at_level("WARNING"):
                again.reindex()
        finally:
            again.stop()
    assert any("(exts reordered)" in r.getMessage() for r in caplog.records)


def test_a_scope_with_an_unclosed_bracket_points_it_out(engine: Engine, data: Path) -> None:
    _folder(data)
    engine.reindex()
    outcome = engine.search("comet", 5, 0.0, parse_scope(path_glob=["loud/*", "quiet/[q1"]))
    assert all(h.chunk.path.startswith("loud/") for h in outcome.hits)
    assert not any("[" in n for n in outcome.notices)  # a scope with files is no puzzle
    outcome = engine.search("comet", 5, 0.0, parse_scope(path_glob="quiet/[q1*"))
    notice = next(n for n in outcome.notices if "matches no indexed file" in n)
    assert notice.endswith('(a "[" without a closing "]" matches itself)')


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"path_glob": "/etc/*"}, "absolute"),
        ({"path_glob": ["ok/*", "../up"]}, "leave the data folder"),
        ({"path_glob": ""}, "must not be empty"),
        ({"modified_after": "yesterday"}, "modified_after must be an ISO 8601 date"),
        ({"modified_after": "2024-W01"}, "modified_after must be an ISO 8601 date"),
        ({"modified_after": "20240101"}, "modified_after must be an ISO 8601 date"),
        ({"modified_after": "2024-061"}, "modified_after must be an ISO 8601 date"),
        ({"modified_after": "2024-03-01 12:00"}, "modified_after must be an ISO 8601 date"),
        ({"modified_after": "2024-03-01T12"}, "modified_after must be an ISO 8601 date"),
        ({"modified_after": "2024-03-01T1200"}, "modified_after must be an ISO 8601 date"),
        ({"modified_after": "2024-03-01+01:00"}, "modified_after must be an ISO 8601 date"),
        ({"modified_after": "2024-03-01T12:00:00+0100"}, "modified_after must be an ISO 8601"),
        ({"modified_before": "2024-13-01"}, "modified_before must be an ISO 8601 date"),
        ({"modified_after": "2024-02-01", "modified_before": "2024-01-01"}, "must be earlier"),
        ({"file_types": ["exe"]}, "neither a supported suffix nor a group"),
        ({"file_types": [" "]}, "at least one"),
    ],
)
def test_bad_scope_arguments_are_one_sentence(kw: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidArgument, match=says) as caught:
        parse_scope(**kw)
    assert "\n" not in str(caught.value)


def test_a_date_is_its_midnight_in_utc_unless_an_offset_is_named() -> None:
    assert parse_time("t", "1970-01-02") == DAY
    assert parse_time("t", "1970-01-02T00:00:00Z") == DAY
    assert parse_time("t", "1970-01-02T02:00:00+02:00") == DAY


def test_the_extended_forms_are_taken_to_the_minute_second_or_fraction() -> None:
    minute = 60 * 10**9
    assert parse_time("t", "1970-01-02T00:01") == DAY + minute
    assert parse_time("t", "1970-01-02T00:01Z") == DAY + minute
    assert parse_time("t", "1970-01-01T19:01-05:00") == DAY + minute
    assert parse_time("t", " 1970-01-02T00:00:00.250Z ") == DAY + 250 * 10**6


def test_a_refused_date_says_which_forms_are_taken() -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_time("modified_after", "2024-W01")
    assert str(caught.value) == (
        "modified_after must be an ISO 8601 date or date-time, YYYY-MM-DD or "
        "YYYY-MM-DDTHH:MM[:SS[.ffffff]] with an optional Z or ±HH:MM, such as 2024-03-01 or "
        '2024-03-01T12:00:00Z (got "2024-W01")'
    )


@pytest.mark.parametrize("size", [50, SUBSET_EXACT + 500])
def test_vector_search_within_a_scope_is_exact(tmp_path: Path, size: int) -> None:
    rng = np.random.default_rng(size)
    vectors = rng.normal(size=(size * 2, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = VectorStore(tmp_path / "v.faiss", 8)
    store.add(list(range(size * 2)), vectors)
    within = np.arange(1, size * 2, 2, dtype=np.int64)  # the odd ids
    query = vectors[0]
    got = store.search(query, 10, within)
    best = within[np.argsort(-(vectors[within] @ query))[:10]]
    assert [cid for cid, _ in got] == best.tolist()


def test_the_search_tool_takes_a_scope_and_refuses_a_bad_one(data: Path) -> None:
    _folder(data)

    async def check(client: Client) -> tuple[Any, Any, Any]:
        scoped = await client.call_tool(
            "search",
            {"query": "comet tails", "path_glob": ["quiet/**"], "file_types": ["txt"], "top_k": 3},
        )
        bad = await client.call_tool("search", {"query": "comet", "modified_after": "soon"})
        empty = await client.call_tool("search", {"query": "comet", "path_glob": "none/*"})
        return scoped, bad, empty

    scoped, bad, empty = run_client(check, data)
    paths = [r["path"] for r in scoped.structured_content["results"]]
    assert len(paths) == 3 and all(p.startswith("quiet/") for p in paths)
    assert bad.is_error and "modified_after must be an ISO 8601" in bad.content[0].text
    assert "\n" not in bad.content[0].text
    assert empty.structured_content["results"] == []
    assert any("matches no indexed file" in n for n in empty.structured_content["notices"])


@pytest.mark.slow  # starts the command or the server as a process
def test_the_cli_search_refuses_a_bad_scope_in_one_line(data: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "micro_rag_mcp.cli.app", "search", str(data), "comet",
         "--path-glob", "a/*", "--modified-before", "tomorrow"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "micro-rag search: error: --modified-before must be an ISO 8601 date" in done.stderr


def test_a_scope_resolved_before_a_change_takes_the_new_files(engine: Engine, data: Path) -> None:
    _folder(data)
    engine.reindex()
    assert "quiet/new.txt" not in _paths(engine, path_glob="quiet/*")
    (data / "quiet" / "new.txt").write_text("Comet tails comet tails comet tails.")
    engine.reindex()
    assert _paths(engine, path_glob="quiet/*")[0] == "quiet/new.txt"


def test_a_scope_of_every_file_ranks_as_no_scope(engine: Engine, data: Path) -> None:
    _folder(data)
    engine.reindex()
    assert _paths(engine, file_types=["docs"]) == _paths(engine)
    assert _paths(engine, modified_after="1990-01-01") == _paths(engine)


def test_a_milvus_store_refuses_a_scope_in_one_sentence(tmp_path: Path) -> None:
    from micro_rag_mcp.core.address import parse_store_url
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.milvus.engine import MilvusEngine
    from tests.fakes import FakeEmbedder

    config = parse_store_url("milvus://127.0.0.1:9/default?collection=docs")
    settings = Settings(data_folder=tmp_path, index_folder=tmp_path / "index", watch="off")
    store = MilvusEngine(settings, FakeEmbedder, config)
    with pytest.raises(InvalidArgument, match="not supported on a Milvus store") as caught:
        store.search("comet", 5, 0.2, parse_scope(path_glob="notes/*"))
    assert "\n" not in str(caught.value)
