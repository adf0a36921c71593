"""Every string a tool or the CLI takes has a length limit, refused in one sentence."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.from_thread
import pytest
from mcp import Client

from micro_rag_mcp.cli.app import main as cli_main
from micro_rag_mcp.core.arguments import MAX_GLOB_CHARS, MAX_GLOBS, MAX_PATH_CHARS, MAX_QUERY_CHARS
from micro_rag_mcp.serve.server import build_server
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings

Portal = anyio.from_thread.BlockingPortal


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Portal, Client]]:
    data = tmp_path_factory.mktemp("limits")
    (data / "note.txt").write_text("herons argue about tea")
    server = build_server(make_settings(data), FakeEmbedder)
    with contextlib.ExitStack() as stack:
        portal = stack.enter_context(anyio.from_thread.start_blocking_portal())
        yield portal, stack.enter_context(portal.wrap_async_context_manager(Client(server)))


def error_of(client: tuple[Portal, Client], tool: str, args: dict[str, Any]) -> str:
    portal, c = client
    result = portal.call(c.call_tool, tool, args)
    assert result.is_error
    return str(result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tool", "name", "limit", "extra"),
    [
        ("search", "query", MAX_QUERY_CHARS, {}),
        ("reindex", "path_glob", MAX_GLOB_CHARS, {}),
        ("search", "path_glob", MAX_GLOB_CHARS, {"query": "tea"}),
        ("read", "path", MAX_PATH_CHARS, {}),
    ],
)
def test_a_string_over_its_limit_is_refused_naming_the_limit(
    client: tuple[Portal, Client], tool: str, name: str, limit: int, extra: dict[str, Any]
) -> None:
    length = 5_000_000
    message = error_of(client, tool, {name: "a" * length, **extra})
    assert message == (
        f"Error executing tool {tool}: {name} must be at most {limit:,} characters (got {length:,})"
    )


def test_a_search_path_glob_list_has_a_limit_on_its_length_and_its_patterns(
    client: tuple[Portal, Client],
) -> None:
    many = error_of(client, "search", {"query": "tea", "path_glob": ["*.txt"] * (MAX_GLOBS + 1)})
    assert many == (
        f"Error executing tool search: path_glob must hold at most {MAX_GLOBS} items "
        f"(got {MAX_GLOBS + 1})"
    )
    long = error_of(client, "search", {"query": "tea", "path_glob": ["*.txt", "a" * 5_000]})
    assert long == (
        "Error executing tool search: path_glob[1] must be at most "
        f"{MAX_GLOB_CHARS:,} characters (got 5,000)"
    )
    portal, c = client
    at_limit = ["*.txt", *(f"none/{i}" for i in range(MAX_GLOBS - 1))]
    result = portal.call(c.call_tool, "search", {"query": "tea", "path_glob": at_limit})
    assert not result.is_error


def test_a_search_path_glob_of_the_wrong_type_is_told_what_it_may_be(
    client: tuple[Portal, Client],
) -> None:
    assert error_of(client, "search", {"query": "tea", "path_glob": 3}).endswith(
        "path_glob must be a string or a list of strings or null (got 3)"
    )
    assert error_of(client, "search", {"query": "tea", "path_glob": ["a", 3]}).endswith(
        "path_glob[1] must be a string (got 3)"
    )


def test_a_query_at_its_limit_is_answered(client: tuple[Portal, Client]) -> None:
    portal, c = client
    result = portal.call(c.call_tool, "search", {"query": "tea " * (MAX_QUERY_CHARS // 4)})
    assert not result.is_error


def test_an_unknown_argument_with_a_huge_value_is_refused_briefly(
    client: tuple[Portal, Client],
) -> None:
    message = error_of(client, "search", {"query": "tea", "x" * 100: "y" * 1_000_000})
    assert "unknown argument" in message and len(message) < 400


@pytest.mark.parametrize(
    ("argv", "limit"),
    [
        (["search", "FOLDER", "q" * 3_000], MAX_QUERY_CHARS),
        (["index", "FOLDER", "--glob", "g" * 5_000], MAX_GLOB_CHARS),
        (["search", "FOLDER", "q", "--path-glob", "g" * 5_000], MAX_GLOB_CHARS),
        (["read", "FOLDER", "p" * 5_000], MAX_PATH_CHARS),
    ],
)
def test_the_cli_refuses_a_string_over_its_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], limit: int
) -> None:
    argv = [str(tmp_path) if a == "FOLDER" else a for a in argv]
    with pytest.raises(SystemExit) as exit_info:
        cli_main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"must be at most {limit:,} characters (got " in err
    assert len(err) < 300


def test_the_cli_refuses_more_path_globs_than_the_tool_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["search", str(tmp_path), "q"]
    for i in range(MAX_GLOBS + 1):
        argv += ["--path-glob", f"f{i}/*"]
    assert cli_main(argv) == 2
    assert capsys.readouterr().err == (
        f"micro-rag search: error: --path-glob may be given at most {MAX_GLOBS} times "
        f"(got {MAX_GLOBS + 1})\n"
    )


def test_the_cli_says_how_to_read_a_name_that_starts_with_a_dash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        cli_main(["read", str(tmp_path), "-leading-dash.txt"])
    assert "put -- before a name that starts with '-'" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--model", "--model-precision"])
def test_the_cli_says_the_encoder_is_chosen_where_the_index_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    with pytest.raises(SystemExit):
        cli_main(["index", str(tmp_path), flag, "int8"])
    err = capsys.readouterr().err
    assert f"{flag} is a flag of micro-rag-mcp, which builds the index with it" in err
    assert "put -- before" not in err and err.count("\n") == 1
    assert not (tmp_path / "index").exists()
