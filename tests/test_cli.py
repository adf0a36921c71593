"""``micro-rag`` as a person runs it: real subprocesses, real files, the real model.

The model runs in few of these (one index of a small folder, two searches, one index that
waits for a lock); everything else reads the index without it.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from micro_rag_mcp.local.layout import ensure_folder
from micro_rag_mcp.serve.read_result import ReadResult
from micro_rag_mcp.serve.tool_results import SearchResult, wire
from tests.docfactory import make_pdf
from tests.indexkit import hold_lock
from tests.waiting import lines_until

pytestmark = pytest.mark.slow

ANSI = "\x1b["


def micro_rag(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "micro_rag_mcp.cli.app", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def make_folder(data: Path) -> Path:
    make_pdf(
        data / "reports" / "airships.pdf",
        [
            "The history of rigid airships. Count Zeppelin flew his first airship in 1900.",
            "The Hindenburg disaster happened at Lakehurst, New Jersey, in May 1937.",
        ],
    )
    (data / "notes.md").write_text("# Garden\n\nTomatoes need six hours of sunlight.\n" * 3)
    (data / "recipe.txt").write_text("Knead the bread dough for ten minutes, then let it rise.")
    (data / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    return data


@pytest.fixture(scope="module")
def indexed(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, subprocess.CompletedProcess[str]]]:
    data = make_folder(tmp_path_factory.mktemp("cli") / "docs")
    yield data, micro_rag("index", str(data))


def test_index_shows_plain_progress_and_a_summary_with_reasons(
    indexed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    _, out = indexed
    assert out.returncode == 0, out.stderr
    counts = dict(line.split() for line in out.stdout.splitlines()[1:6])
    assert counts == {"added": "3", "updated": "0", "removed": "0", "unchanged": "0", "failed": "1"}
    assert "broken.pdf" in out.stdout and "damaged or not a PDF" in out.stdout
    assert "reading files: 4 to do" in out.stderr and "embedding chunks:" in out.stderr
    assert ANSI not in out.stdout + out.stderr  # not a terminal: no bar, no colours


def test_search_prints_ranked_passages_with_their_place(
    indexed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    data, _ = indexed
    out = micro_rag("search", str(data), "Hindenburg disaster", "-k", "2")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("1. reports/airships.pdf  page 2  relevance 1.00, cosine")
    assert lines[1].startswith("The Hindenburg disaster happened at Lakehurst")
    assert not (data / "index" / "model-graph.onnx").exists()  # the graph is shipped, not built


def test_search_json_is_the_mcp_search_result(
    indexed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    data, _ = indexed
    out = micro_rag("search", str(data), "knead dough", "--json", "--threshold", "0.3")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert wire(SearchResult.model_validate(result)) == result
    assert result["results"][0]["path"] == "recipe.txt"
    assert result["index"]["files_indexed"] == 3 and result["index"]["model"] == "ready"


def test_status_tells_files_failures_vectors_and_size(
    indexed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    data, _ = indexed
    out = micro_rag("status", str(data), "--json")
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    assert (status["files_indexed"], status["files_failed"]) == (3, 1)
    assert status["failed"][0]["path"] == "broken.pdf"
    assert status["chunks"] == status["chunks_with_vectors"] > 0
    assert status["size_bytes"] > 0 and status["writer"] is None and status["model"] == "installed"
    assert status["vector_model"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert abs(status["last_indexed_at"] - time.time()) < 3600
    text = micro_rag("status", str(data))
    assert "3 indexed, 1 failed" in text.stdout and "broken.pdf" in text.stdout


def test_read_prints_a_page_and_a_range_and_says_how_to_go_on(
    indexed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    data, _ = indexed
    page = micro_rag("read", str(data), "reports/airships.pdf", "--page", "2")
    assert page.returncode == 0, page.stderr
    assert (
        page.stdout == "The Hindenburg disaster happened at Lakehurst, New Jersey, in May 1937.\n"
    )
    assert "page 2" in page.stderr
    first = micro_rag("read", str(data), "recipe.txt", "--max-chars", "10")
    assert first.stdout == "Knead the \n"
    assert f"more: micro-rag read {data} recipe.txt --start 10 --max-chars 10" in first.stderr
    ranged = micro_rag("read", str(data), "recipe.txt", "--end", "30", "--max-chars", "10")
    assert "recipe.txt --start 10 --end 30 --max-chars 10" in ranged.stderr  # the same range
    beyond = micro_rag("read", str(data), "recipe.txt", "--start", "5000")
    assert beyond.returncode == 2 and "error: --start must be less than" in beyond.stderr
    rest = json.loads(micro_rag("read", str(data), "recipe.txt", "--start", "10", "--json").stdout)
    assert wire(ReadResult.model_validate(rest)) == rest
    assert rest["text"] == "bread dough for ten minutes, then let it rise."
    assert rest["next_char_start"] is None


def stderr_lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr or []], daemon=True).start()
    return lines


def test_index_waits_for_a_writer_or_names_it_while_search_and_status_work(
    indexed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    data, _ = indexed
    holder = hold_lock(data / "index" / "index.lock")
    try:
        busy = micro_rag("index", str(data), "--no-wait")
        assert busy.returncode == 1
        assert busy.stderr.strip().endswith(
            f"already running on this index (process {holder.pid}: reading 3/7); "
            "try again when it finishes"
        )
        status = json.loads(micro_rag("status", str(data), "--json").stdout)
        assert status["writer"] == {"pid": holder.pid, "phase": "reading", "done": 3, "total": 7}
        assert micro_rag("read", str(data), "recipe.txt").returncode == 0
        waiting = subprocess.Popen(
            [sys.executable, "-m", "micro_rag_mcp.cli.app", "index", str(data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines = stderr_lines(waiting)
        lines_until(lines, lambda line: line.startswith("waiting:"), "a waiting: line", 120)
    finally:
        holder.kill()
        holder.communicate()
    stdout, _ = waiting.communicate(timeout=300)
    assert waiting.returncode == 0
    assert "unchanged  3" in stdout


def test_index_notices_name_the_flag_the_person_typed(
    indexed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    data, _ = indexed
    out = micro_rag("index", str(data), "--glob", "nomatch/**")
    assert out.returncode == 0, out.stderr
    assert 'note: --glob "nomatch/**" matches no file' in out.stderr
    assert "path_glob" not in out.stdout + out.stderr


def test_search_notices_name_the_flags_the_person_typed(
    indexed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    data, _ = indexed
    out = micro_rag(
        "search", str(data), "tomatoes", "--path-glob", "reports/[2024*", "--file-types", "md"
    )
    assert out.returncode == 0, out.stderr
    assert (
        'note: the scope (--path-glob "reports/[2024*" and --file-types .md) matches no indexed '
        'file; nothing was searched (a "[" without a closing "]" matches itself)'
    ) in out.stderr
    assert "path_glob" not in out.stdout + out.stderr
    assert "file_types" not in out.stdout + out.stderr


def test_search_keeps_to_the_files_its_scope_flags_take(tmp_path: Path) -> None:
    data = tmp_path / "docs"
    names = ["keep/new.md", "keep/new.txt", "keep/old.md", "other/new.md"]
    for i, name in enumerate(names):  # distinct passages: near-copies would be one result
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(
            f"The lighthouse keeper logs the fog horn ({name}).\n"
            f"Entry {i}: {['gulls', 'tides', 'ships', 'rain'][i]} seen past midnight in the "
            f"{['north', 'south', 'east', 'west'][i]} bay, "
            f"{['calm', 'rough', 'grey', 'dark'][i]} water.\n"
        )
    old = time.mktime((2020, 1, 1, 0, 0, 0, 0, 0, -1))
    os.utime(data / "keep" / "old.md", (old, old))
    assert micro_rag("index", str(data)).returncode == 0

    def found(*flags: str) -> list[str]:
        out = micro_rag("search", str(data), "lighthouse fog horn", "-k", "10", "--json", *flags)
        assert out.returncode == 0, out.stderr
        return sorted(r["path"] for r in json.loads(out.stdout)["results"])

    assert found() == names
    scoped = found(
        "--path-glob", "keep/new.*", "--path-glob", "keep/old.md",  # not other/
        "--modified-after", "2021-06-01T00:00Z",  # not keep/old.md
        "--file-types", "md,pdf",  # not keep/new.txt
    )  # fmt: skip
    assert scoped == ["keep/new.md"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["search", "{missing}", "x"],
            "micro-rag search: error: FOLDER {missing}: not an existing folder",
        ),
        (["index", "{file}"], "FOLDER {file}: a file, not a folder"),
        (
            ["search", "{data}", "x", "-k", "0"],
            "argument -k/--top-k: must be between 1 and 50 (got 0)",
        ),
        (
            ["search", "{data}", "x", "--threshold", "2"],
            "argument --threshold: must be between 0 and 1",
        ),
        (["search", "{data}", "   "], "micro-rag search: error: QUERY must contain some text"),
        (["read", "{data}", "a.txt", "--page", "0"], "argument --page: must be at least 1 (got 0)"),
        (
            ["read", "{data}", "a.txt", "--start", "x"],
            "argument --start: must be an integer (got 'x')",
        ),
        (["index", "{data}", "--exts", ".exe"], "--exts: unsupported extension '.exe'"),
        (["index", "{data}", "--glob", "/etc/*"], "micro-rag index: error: --glob '/etc/*' is"),
        (["index", "{data}", "--chunk-size", "10"], "--chunk-size must be at least 50"),
        (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
    ],
)
def test_bad_input_is_one_line_and_status_2_and_creates_nothing(
    tmp_path: Path, args: list[str], message: str
) -> None:
    data = tmp_path / "docs"
    data.mkdir()
    (data / "a.txt").write_text("Alpha.")
    values = {"data": str(data), "missing": str(tmp_path / "missing"), "file": str(data / "a.txt")}
    out = micro_rag(*(a.format(**values) for a in args))
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and message.format(**values) in out.stderr
    assert sorted(tmp_path.rglob("*")) == [data, data / "a.txt"]


@pytest.mark.parametrize("command", ["search", "status", "read"])
def test_reading_commands_on_a_folder_without_index_create_none(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / "a.txt").write_text("Alpha.")
    args = {"search": ["alpha"], "status": [], "read": ["a.txt"]}[command]
    out = micro_rag(command, str(tmp_path), *args)
    assert out.returncode == 1
    assert out.stderr.strip() == (
        f"micro-rag {command}: no index in {tmp_path / 'index'}; run micro-rag index {tmp_path}"
    )
    assert not (tmp_path / "index").exists()


@pytest.mark.parametrize("command", ["index", "search", "status", "read"])
def test_every_command_has_help(command: str) -> None:
    out = micro_rag(command, "--help")
    assert out.returncode == 0 and out.stdout.startswith(f"usage: micro-rag {command} ")


def test_read_unknown_path_is_bad_input(
    indexed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    data, _ = indexed
    out = micro_rag("read", str(data), "gone/airships.pdf")
    assert out.returncode == 2
    assert out.stderr == (
        'micro-rag read: error: no file "gone/airships.pdf" in the index; did you mean '
        '"reports/airships.pdf"?\n'
    )
    assert os.path.exists(data / "index")


def test_the_command_line_imports_neither_mcp_nor_a_heavy_library() -> None:
    code = (
        "import sys, micro_rag_mcp.cli.app, micro_rag_mcp.cli.commands, micro_rag_mcp.cli.output;"
        "heavy = {'mcp', 'faiss', 'onnxruntime', 'onnx', 'pypdfium2', 'docx', 'tokenizers'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_ctrl_c_while_index_waits_for_the_lock_ends_it_with_status_130(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Alpha.")
    holder = hold_lock(tmp_path / "index" / "index.lock")
    try:
        waiting = subprocess.Popen(
            [sys.executable, "-m", "micro_rag_mcp.cli.app", "index", str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines = stderr_lines(waiting)
        lines_until(lines, lambda line: line.startswith("waiting:"), "a waiting: line", 120)
        waiting.send_signal(signal.SIGINT)
        assert waiting.wait(timeout=60) == 130
        # A progress line may still come between, on a slow machine.
        rest = lines_until(lines, lambda line: line == "micro-rag index: interrupted\n", "the end")
        said = [line for line in rest if line.startswith("micro-rag")]
        assert said == [
            "micro-rag: stopping at the next step; what is done is kept\n",
            "micro-rag index: interrupted\n",
        ]
    finally:
        holder.kill()
        holder.communicate()


class _StopRecorder:
    def __init__(self) -> None:
        self.stops: list[float] = []

    def stop(self, timeout: float = 60.0) -> None:
        self.stops.append(timeout)


@pytest.mark.parametrize("repeat", range(10))
def test_ctrl_c_at_any_moment_of_an_index_stops_its_work_before_it_returns(repeat: int) -> None:
    """Ctrl+C as the work starts (on a busy machine the thread runs before ``start``
    returns) or while it runs: the work is told to stop, and it has ended when Ctrl+C
    reaches the caller."""
    from micro_rag_mcp.cli.commands import _interruptible

    engine = _StopRecorder()
    seen: list[str] = []

    def work(stop: threading.Event) -> str:
        os.kill(os.getpid(), signal.SIGINT)
        told = stop.wait(120)
        seen.append("stopped" if told else "never told")
        return "done"

    with pytest.raises(KeyboardInterrupt):
        _interruptible(engine, work)  # type: ignore[arg-type]
    assert seen == ["stopped"] and engine.stops == [0.0]


def test_index_takes_the_exclusions_and_the_precision_of_the_index(tmp_path: Path) -> None:
    from micro_rag_mcp.cli.app import build_parser
    from micro_rag_mcp.cli.commands import _index_settings
    from micro_rag_mcp.local.catalog import Catalog

    data = tmp_path / "docs"
    ensure_folder(data / "index")  # an index folder of ours (its marker), as a server leaves it
    args = build_parser().parse_args(["index", str(data), "--exclude", "drafts/"])
    settings = _index_settings(args)
    assert settings.exclude == ("drafts/",) and settings.model_precision == "fp32"
    assert settings.model == "auto"  # a new index: its folder's language chooses
    catalog = Catalog.open(data / "index" / "catalog.sqlite3")
    catalog.set_meta("vector_model", "sentence-transformers/all-MiniLM-L6-v2@x+int8;title+text")
    catalog.close()
    assert _index_settings(args).model_precision == "int8"
    assert _index_settings(args).model == "minilm"
    catalog = Catalog.open(data / "index" / "catalog.sqlite3")
    catalog.set_meta("vector_model", "intfloat/multilingual-e5-small@x;title+text")
    catalog.close()
    assert _index_settings(args).model == "e5-small"


def test_index_follows_the_files_the_index_takes_unless_told_otherwise(tmp_path: Path) -> None:
    """A server ran with --exts, --exclude and --max-file-size: ``micro-rag index`` on the
    same folder takes the same files, so neither undoes the other; flags given win."""
    from micro_rag_mcp.cli.app import build_parser
    from micro_rag_mcp.cli.commands import _index_settings
    from micro_rag_mcp.local.catalog import Catalog
    from micro_rag_mcp.serve.main import build_parser as server_parser
    from micro_rag_mcp.serve.main import settings_from_args

    data = tmp_path / "docs"
    ensure_folder(data / "index")  # an index folder of ours (its marker), as a server leaves it
    parse = build_parser().parse_args
    fresh = _index_settings(parse(["index", str(data)]))
    assert fresh.exts and fresh.exclude == () and fresh.max_file_bytes == 100 * 1024 * 1024
    server = settings_from_args(
        server_parser().parse_args(
            ["--data-folder", str(data), "--title", "t", "--inst", "i", "--exts", ".md,code",
             "--exclude", "drafts/", "--max-file-size", "2"]
        )
    )  # fmt: skip
    catalog = Catalog.open(data / "index" / "catalog.sqlite3")
    catalog.set_meta("scope", server.scope_record)
    catalog.close()
    followed = _index_settings(parse(["index", str(data)]))
    assert followed.scope_record == server.scope_record
    told = _index_settings(parse(["index", str(data), "--exts", ".txt", "--exclude", "old/"]))
    assert told.exts == (".txt",) and told.exclude == ("old/",)
    assert told.max_file_bytes == 2 * 1024 * 1024  # not given: the index's
    catalog = Catalog.open(data / "index" / "catalog.sqlite3")
    catalog.set_meta("scope", '{"exts": [".exe"], "exclude": [], "max_file_bytes": 1}')
    catalog.close()  # a record no flag would give is not followed
    assert _index_settings(parse(["index", str(data)])).scope_record == fresh.scope_record
