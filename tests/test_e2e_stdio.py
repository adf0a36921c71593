"""End to end: `micro-rag-mcp` as a subprocess, over stdio, with the real model and real files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from micro_rag_mcp.model.files import MINILM, find_weights
from tests.docfactory import Heading, Table, make_docx, make_pdf
from tests.formatfactory import (
    Slide,
    code_cell,
    make_epub,
    make_ipynb,
    make_pptx,
    make_xlsx,
    md_cell,
)
from tests.mcpkit import stdio_params, wait_complete

pytestmark = pytest.mark.slow


async def reindex(client: Client, **arguments: Any) -> dict[str, Any]:
    """The report of a reindex pass: a call answers within 25 s whether or not its pass
    has ended, and a call with the same arguments joins the same pass."""
    with anyio.fail_after(120):
        while True:
            report = (await client.call_tool("reindex", arguments)).structured_content
            assert report is not None
            if not report["running"]:
                return report


async def top_paths(client: Client, query: str, k: int = 3) -> list[str]:
    out = (await client.call_tool("search", {"query": query, "top_k": k})).structured_content
    return [r["path"] for r in out["results"]]  # type: ignore[index]


@pytest.fixture
def mixed_folder(tmp_path: Path) -> Path:
    data = tmp_path / "docs"
    make_pdf(
        data / "reports" / "airships.pdf",
        [
            "The history of rigid airships. Count Zeppelin flew his first airship in 1900.",
            "The Hindenburg disaster happened at Lakehurst, New Jersey, in May 1937.",
        ],
    )
    make_docx(
        data / "handbook.docx",
        [
            Heading("Expense policy"),
            "Employees are reimbursed for train tickets within thirty days of travel.",
            Table([["Item", "Limit"], ["Hotel night", "150 euros"]]),
        ],
    )
    (data / "notes.md").write_text(
        "# Garden\n\nTomatoes need six hours of sunlight and regular watering.\n"
    )
    (data / "recipe.txt").write_text("Knead the bread dough for ten minutes, then let it rise.")
    return data


def test_search_and_reindex_over_stdio_follow_the_folder(
    mixed_folder: Path, launch_mode: str
) -> None:
    data = mixed_folder

    async def main() -> None:
        # Not watched: the counts of the reindex below are this call's alone.
        async with Client(stdio_params(data, "--no-watch"), mode="legacy") as client:
            assert client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS  # initialize
            assert client.instructions == "Search the docs."
            index = await wait_complete(client)
            assert (index["files_indexed"], index["files_failed"]) == (4, 0)
            assert index["watch"] == "off"

            out = (
                await client.call_tool(
                    "search", {"query": "Hindenburg disaster at Lakehurst", "top_k": 3}
                )
            ).structured_content
            top = out["results"][0]  # type: ignore[index]
            assert top["path"] == "reports/airships.pdf" and top["page"] == 2
            assert top["score"] > 0.4 and "vector" in top["matched_by"]
            assert (await top_paths(client, "hotel limit in the expense policy"))[
                0
            ] == "handbook.docx"
            assert (await top_paths(client, "how long to knead dough"))[0] == "recipe.txt"
            await read_over_stdio(client, top)

            (data / "recipe.txt").write_text("Whisk the eggs with sugar until pale and fluffy.")
            (data / "notes.md").unlink()
            report = await reindex(client)
            assert report["files_updated"] == 1 and report["files_removed"] == 1
            assert report["files_unchanged"] == 2

            assert "notes.md" not in await top_paths(client, "tomatoes sunlight watering", 5)
            assert (await top_paths(client, "whisk eggs and sugar"))[0] == "recipe.txt"
            after = await wait_complete(client)
            assert after["files_indexed"] == 3

    anyio.run(main)


def test_the_server_writes_nothing_outside_its_index_folder(
    tmp_path: Path, launch_mode: str
) -> None:
    data, home, tmp = tmp_path / "docs", tmp_path / "home", tmp_path / "tmp"
    for folder in (data, home, tmp):
        folder.mkdir()
    (data / "notes.md").write_text("# Garden\n\nTomatoes need six hours of sunlight.\n")
    params = stdio_params(data)
    # Caches and telemetry follow HOME (or XDG_*); libraries can be told off by ORT_*.
    inherited = {k: v for k, v in (params.env or {}).items() if not k.startswith(("XDG_", "ORT_"))}
    params.env = {**inherited, "HOME": str(home), "TMPDIR": str(tmp)}
    model_dir = find_weights(MINILM).parent  # its weights are read by the server, never written
    model_files = {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()}

    async def main() -> None:
        async with Client(params) as client:
            await wait_complete(client)
            assert await top_paths(client, "tomatoes and sunlight") == ["notes.md"]

    anyio.run(main)
    assert {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()} == model_files
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == []
    assert sorted(p.relative_to(tmp) for p in tmp.rglob("*")) == []
    assert sorted(p.name for p in data.iterdir()) == ["index", "notes.md"]


async def read_over_stdio(client: Client, hit: dict[str, Any]) -> None:
    """A PDF page, a text range continued from next_char_start, and the refusals."""

    async def read(**args: Any) -> Any:
        return await client.call_tool("read", args)

    page = (await read(path=hit["path"], page=hit["page"])).structured_content
    assert page["text"].startswith("The Hindenburg disaster") and page["page"] == 2  # type: ignore[index]
    assert page["char_start"] <= hit["char_start"] and page["next_char_start"] is None  # type: ignore[index]
    first = (await read(path="recipe.txt", max_chars=20)).structured_content
    assert first["text"] == "Knead the bread doug" and first["next_char_start"] == 20  # type: ignore[index]
    rest = (await read(path="recipe.txt", char_start=20)).structured_content
    assert (
        first["text"] + rest["text"] == "Knead the bread dough for ten minutes, then let it rise."
    )  # type: ignore[index]
    assert (rest["line_start"], rest["next_char_start"]) == (1, None)  # type: ignore[index]
    unknown, outside = await read(path="nowhere.txt"), await read(path="/etc/hostname")
    assert unknown.is_error and 'no file "nowhere.txt" in the index' in unknown.content[0].text
    assert outside.is_error and "outside the data folder" in outside.content[0].text


def test_server_discover_era_and_restart_reuse_the_index(
    mixed_folder: Path, launch_mode: str
) -> None:
    async def first() -> None:
        async with Client(stdio_params(mixed_folder)) as client:
            await wait_complete(client)

    async def second() -> dict[str, Any]:
        async with Client(stdio_params(mixed_folder), mode="auto") as client:
            assert client.protocol_version in MODERN_PROTOCOL_VERSIONS  # server/discover
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == {"search", "reindex", "read"}
            await wait_complete(client)
            return await reindex(client)

    anyio.run(first)
    report = anyio.run(second)
    assert report["files_unchanged"] == 4 and report["chunks_embedded"] == 0


def test_bad_flags_exit_2_with_one_line_before_any_protocol(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "micro_rag_mcp", "--title", "t", "--inst", "i", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    missing = run("--data-folder", str(tmp_path / "nope"))
    assert missing.returncode == 2 and missing.stdout == ""
    assert "--data-folder" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    bad_ext = run("--data-folder", str(tmp_path), "--exts", ".txt,.exe")
    assert bad_ext.returncode == 2 and "'.exe'" in bad_ext.stderr
    blocker = tmp_path / "file"
    blocker.write_text("x")
    bad_index = run("--data-folder", str(tmp_path), "--index-folder", str(blocker / "idx"))
    assert bad_index.returncode == 2 and "--index-folder" in bad_index.stderr


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--exts", ".txt,.exe"], "--exts"),
        (["--chunk-size", "10"], "--chunk-size"),
        (["--chunk-overlap", "900"], "--chunk-overlap"),
        (["--max-file-size", "0"], "--max-file-size"),
        (["--title", " "], "--title"),
        (["--poll-interval", "0"], "--poll-interval"),
        (["--model-precision", "fp16"], "--model-precision"),
        (["--model", "bge"], "--model"),
    ],
)
def test_a_rejected_flag_changes_nothing_on_disk(
    tmp_path: Path, flags: list[str], named: str
) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    elsewhere = tmp_path / "elsewhere" / "idx"
    for index_flags in ([], ["--index-folder", str(elsewhere)]):
        out = subprocess.run(
            [sys.executable, "-m", "micro_rag_mcp", "--data-folder", str(data)]
            + ["--title", "t", "--inst", "i", *index_flags, *flags],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 2 and out.stdout == ""
        assert len(out.stderr.strip().splitlines()) == 1 and named in out.stderr, out.stderr
        assert sorted(tmp_path.rglob("*")) == [data], "a rejected start created folders"


def test_model_precision_reaches_the_settings(tmp_path: Path) -> None:
    from micro_rag_mcp.serve.main import build_parser, settings_from_args

    base = ["--data-folder", str(tmp_path), "--title", "t", "--inst", "i"]
    assert settings_from_args(build_parser().parse_args(base)).model_precision == "fp32"
    int8 = build_parser().parse_args([*base, "--model-precision", "int8"])
    assert settings_from_args(int8).model_precision == "int8"
    assert settings_from_args(build_parser().parse_args(base)).model == "auto"
    e5 = build_parser().parse_args([*base, "--model", "e5-small"])
    assert settings_from_args(e5).model == "e5-small"


def test_importing_the_server_loads_no_heavy_library() -> None:
    code = (
        "import sys, micro_rag_mcp.serve.main, micro_rag_mcp.serve.server;"
        "import micro_rag_mcp.local.engine;"
        "heavy = {'faiss', 'onnxruntime', 'onnx', 'pypdfium2', 'pypdf', 'docx', 'tokenizers'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_multi_instance_example_runs_side_by_side(tmp_path: Path, launch_mode: str) -> None:
    """The design's example: two processes, two folders, the same title, separate indexes."""
    alpha, beta = tmp_path / "teamA", tmp_path / "teamB"
    alpha.mkdir()
    beta.mkdir()
    (alpha / "islands.txt").write_text("Alpha's secret island is north of the reef.")
    (beta / "islands.md").write_text("Beta's secret island has a volcano and a lagoon.")

    def params(folder: Path, inst: str) -> StdioServerParameters:
        return stdio_params(folder, title="Secret Islands", inst=inst)

    async def main() -> None:
        async with (
            Client(params(alpha, "Team Alpha read-only mode with nightly refresh")) as a,
            Client(params(beta, "Team Beta\nwrite-enabled\nmanual refresh")) as b,
        ):
            assert a.server_info is not None and a.server_info.name == "Secret Islands"
            assert b.instructions == "Team Beta\nwrite-enabled\nmanual refresh"
            await wait_complete(a)
            await wait_complete(b)
            assert await top_paths(a, "secret island", 5) == ["islands.txt"]
            assert await top_paths(b, "secret island", 5) == ["islands.md"]

    anyio.run(main)
    assert (alpha / "index" / "catalog.sqlite3").exists()
    assert (beta / "index" / "catalog.sqlite3").exists()


def test_a_passage_of_every_format_is_found_with_its_locator(tmp_path: Path) -> None:
    """A mixed folder over stdio: each format's passage comes back where it is in the file."""
    data = tmp_path / "docs"
    data.mkdir()
    (data / "page.html").write_text(
        "<html><head><title>Guide</title></head><body><nav>Menu</nav>"
        "<h1>Harbour</h1><p>The quokka ferry leaves at dawn.</p></body></html>"
    )
    (data / "staff.csv").write_text("Name,Animal\nAda,wombat\nBob,narwhal\n")
    make_xlsx(data / "sales.xlsx", {"Q3": [["Region", "Mascot"], ["North", "axolotl"]]})
    make_pptx(data / "deck.pptx", [Slide("Intro"), Slide("Plans", body=["Adopt a pangolin"])])
    make_epub(data / "book.epub", [("Book", "<h1>Voyage</h1><p>An albatross followed.</p>")])
    make_ipynb(data / "nb.ipynb", [md_cell("# Setup"), code_cell("capybara = 1")])
    (data / "notes.md").write_text("# Zoo\n\n## Birds\n\nThe cassowary is shy.\n")
    (data / "ja.txt").write_text("東京都庁の職員は毎朝九時に会議を開きます。")
    expected = {
        "quokka": ("page.html", "Harbour", None),
        "narwhal": ("staff.csv", None, "rows 2–3"),
        "axolotl": ("sales.xlsx", None, 'sheet "Q3" row 2'),
        "pangolin": ("deck.pptx", "Plans", "slide 2"),
        "albatross": ("book.epub", "Voyage", None),
        "capybara": ("nb.ipynb", "Setup", "cells 1–2"),
        "cassowary": ("notes.md", "Zoo", None),  # the section where the passage starts
        "会議": ("ja.txt", None, None),  # CJK: found by keyword at the default threshold
    }

    async def main() -> dict[str, dict[str, Any]]:
        async with Client(stdio_params(data)) as client:
            await wait_complete(client)
            found = {}
            for word in expected:
                out = await client.call_tool("search", {"query": word, "top_k": 1})
                found[word] = out.structured_content["results"][0]  # type: ignore[index]
            return found

    found = anyio.run(main)
    for word, (path, section, locator) in expected.items():
        hit = found[word]
        assert (hit["path"], hit["section"], hit["locator"]) == (path, section, locator), word
        assert word in hit["snippet"]
