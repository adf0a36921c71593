"""The indexing section of ``bench.perf``: a first index against the encoder's own speed,
start-up through the MCP interface, no-change reindex, and memory while indexing. The
first index is measured by ``bench.indexing_pass``; the generated folders are made by
``bench.indexing_folders``.

- encoder alone vs. end-to-end first index on the same real folder, in chunks/s: the
  end-to-end pass is the server's own (``Engine.reindex`` with the real model, loaded
  beforehand); the encoder alone then embeds that index's chunk texts in one call; two
  rounds of each, alternating, the best of each (``--indexing-levers``: each lever alone
  beside the shipped pass);
- the MCP handshake against a bare ``MCPServer``'s, side by side (``bench.handshake``);
- the server over stdio on a generated folder (``--indexing-files``, fresh index): time
  from process start to the MCP handshake and to the first keyword answer, and with
  ``--indexing-full`` to all vectors (minutes: the encoder does every chunk);
- no-change reindex on the generated folders, in process, nothing to embed (the cached
  index carries vectors of a stand-in encoder, so reconciling them is real work);
- first keyword answer from the server on ``--indexing-big`` files, on the cached index;
- peak RSS (``VmHWM``, each process's own) of a keyword-only first index, its process and
  its reader process, on 100 to 10,000 files (and ``--indexing-big`` files with
  ``--indexing-memory-big``), a large generated folder and one very large DOCX.

Generated folders and their indexes are cached under ``--work``: the first run builds the
big one once (several minutes), later runs reuse it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.handshake import rows as handshake_rows
from bench.indexing_folders import (
    big_docx,
    large_folder,
    notes_folder,
)
from bench.indexing_pass import pass_rows, profile, profile_rows, run_ways, variants
from bench.perf_common import ChildrenPeak, Row, peak_rss_mb

SECTION = "indexing"
REPO = Path(__file__).resolve().parent.parent


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("indexing")
    g.add_argument(
        "--indexing-files",
        type=int,
        default=10_000,
        help="files of the generated folder",
    )
    g.add_argument(
        "--indexing-big",
        type=int,
        default=100_000,
        help="files of the big generated folder (0 skips it; built once, then cached)",
    )
    g.add_argument(
        "--indexing-parts",
        default=",".join(PARTS),
        metavar="LIST",
        help="of: pass (encoder alone vs. a first index), start (the server's start-up), "
        "no-change (reindex), memory (peak RSS of keyword-only first indexes)",
    )
    g.add_argument(
        "--indexing-levers",
        default="",
        metavar="LIST",
        help="also run the pass with each lever alone, alternating with the shipped one: "
        "before (the pass as it was: 16 from 128 by characters), tokens, steps32, window, nice",
    )
    g.add_argument(
        "--indexing-rounds",
        type=int,
        default=2,
        help="rounds of the encoder alone vs. a first index, the best of each kept",
    )
    g.add_argument(
        "--indexing-model",
        default="minilm",
        choices=("minilm", "minilm-int8", "e5-small", "e5-small-int8"),
        help="the encoder of the pass (encoder alone vs. a first index); -int8: at "
        "--model-precision int8",
    )
    g.add_argument(
        "--indexing-memory-big",
        action="store_true",
        help="also the peak RSS of a keyword-only first index of the --indexing-big folder "
        "(minutes: a transaction and an fsync per file)",
    )
    g.add_argument(
        "--indexing-large-mb",
        type=int,
        default=256,
        help="size of the generated folder of large text whose keyword-only first index's "
        "memory is measured (0 skips it; made once, then cached)",
    )
    g.add_argument(
        "--indexing-profile",
        action="store_true",
        help="also time each stage of a first index alone on the real folders",
    )
    g.add_argument(
        "--indexing-full",
        action="store_true",
        help="also time the server to all vectors on the generated folder (minutes)",
    )


PARTS = ("pass", "start", "no-change", "memory")


def run(args: argparse.Namespace) -> list[Row]:
    work: Path = args.work / "indexing"
    work.mkdir(parents=True, exist_ok=True)
    n_files = 1_000 if args.quick else args.indexing_files
    n_big = 0 if args.quick else args.indexing_big
    parts = [p.strip() for p in args.indexing_parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise SystemExit(f"--indexing-parts: unknown {', '.join(unknown)}; from {', '.join(PARTS)}")
    rows: list[Row] = []
    if "pass" in parts:
        for name, folder in (("realdocs", args.realdocs), ("sec10q_dev", args.sec10q)):
            if folder is not None:
                rows += encoder_vs_pass(
                    name,
                    folder,
                    work,
                    args.indexing_levers,
                    args.indexing_rounds,
                    args.indexing_model,
                )
                if args.indexing_profile:
                    rows += stage_profile(name, folder, work)
    small = notes_folder(work, n_files)
    if "start" in parts:
        rows += handshake_rows(work / "handshake-docs", 5 if args.quick else 15, SECTION)
        rows += server_start(small, work / f"fresh-{n_files}", n_files, full=args.indexing_full)
        if n_big:
            big = notes_folder(work, n_big)
            rows += server_start(big, catalog_copy(big, work), n_big, full=False, fresh=False)
    if "no-change" in parts:
        rows += no_change(small, work, n_files)
        if n_big:
            rows += no_change(notes_folder(work, n_big), work, n_big)
    if "memory" in parts:
        large_mb = 0 if args.quick else args.indexing_large_mb
        memory_big = n_big if args.indexing_memory_big else 0
        rows += indexing_memory(work, small, n_files, memory_big, large_mb)
    return rows


# -- generated folders -------------------------------------------------------------------


def cached_index(folder: Path, work: Path) -> Path:
    """An index of ``folder`` built once, with vectors of a stand-in encoder (384-d)."""
    index = work / f"{folder.name}.index"
    if not (index / ".complete").exists():
        shutil.rmtree(index, ignore_errors=True)
        print(f"# building the index of {folder.name} (once)", file=sys.stderr)
        _child("build", folder, index)
        (index / ".complete").write_text("")
    return index


def catalog_copy(folder: Path, work: Path) -> Path:
    """A fresh index folder holding a copy of the cached catalog, without its vectors.

    The server's model is not the stand-in that made the cached vectors, so it would drop
    them; it gets a copy, and its start-up pass embeds every chunk while it is timed.
    """
    index = work / f"{folder.name}.server-index"
    shutil.rmtree(index, ignore_errors=True)
    index.mkdir()
    cached = cached_index(folder, work)
    for name in ("catalog.sqlite3", "version"):
        shutil.copy2(cached / name, index / name)
    return index


# -- encoder alone vs. the whole pass ----------------------------------------------------


def stage_profile(name: str, folder: Path, work: Path) -> list[Row]:
    return profile_rows(name, json.loads(_child("profile", folder, work / f"profile-{name}")))


def encoder_vs_pass(
    name: str, folder: Path, work: Path, keys: str, rounds: int, model: str = "minilm"
) -> list[Row]:
    index = work / f"pass-{name}-{model}"
    out = json.loads(_child("encoder-vs-pass", folder, index, keys, str(rounds), model))
    return pass_rows(name if model == "minilm" else f"{name}, {model}", out)


# -- the server over stdio ---------------------------------------------------------------


def server_start(folder: Path, index: Path, n: int, *, full: bool, fresh: bool = True) -> list[Row]:
    """Times from process start, through the MCP interface."""
    import anyio

    if fresh:
        shutil.rmtree(index, ignore_errors=True)
    times = anyio.run(_time_server, folder, index, n, full)
    kind = "fresh index" if fresh else "existing catalog and model graph, no vectors"
    label = f"{n} files, {kind}"
    rows = [
        Row(SECTION, f"start to MCP handshake, {label}", f"{times['handshake']:.2f} s"),
        Row(
            SECTION,
            f"start to first keyword answer, {label}",
            f"{times['keyword']:.2f} s",
            "<= 2 s" if n >= 100_000 else "",
            "start-up pass running meanwhile",
        ),
    ]
    if "vectors" in times:
        rows.append(Row(SECTION, f"start to all vectors, {label}", f"{times['vectors']:.0f} s"))
    return rows


async def _time_server(folder: Path, index: Path, n: int, full: bool) -> dict[str, float]:
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "micro_rag_mcp", "--data-folder", str(folder), "--title", "bench"]
        + ["--inst", "bench", "--index-folder", str(index), "--no-watch", "--model", "minilm"],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    word = f"item{n - 1}"  # the last file: its own word
    times: dict[str, float] = {}
    started = time.perf_counter()
    async with Client(params, mode="legacy") as client:
        times["handshake"] = time.perf_counter() - started
        while True:
            query = {"query": f"item0 {word}"}  # the first file or the last: either is read first
            out = (await client.call_tool("search", query)).structured_content
            assert out is not None
            if out["results"]:
                times["keyword"] = time.perf_counter() - started
                break
            await anyio.sleep(0.05)
        if full:
            while True:
                out = (await client.call_tool("search", {"query": word})).structured_content
                assert out is not None
                state = out["index"]
                if not state["indexing"] and state["chunks_with_vectors"] == n:
                    times["vectors"] = time.perf_counter() - started
                    break
                await anyio.sleep(1.0)
    return times


# -- no-change reindex -------------------------------------------------------------------


def no_change(folder: Path, work: Path, n: int) -> list[Row]:
    index = cached_index(folder, work)
    out = json.loads(_child("no-change", folder, index))
    target = "<= 0.3 s" if n <= 10_000 else "<= 3 s"
    return [
        Row(
            SECTION,
            f"no-change reindex, {n} files",
            f"{out['best_s']:.2f} s",
            target,
            f"best of {out['runs']}, median {out['median_s']:.2f} s",
        ),
        Row(
            SECTION,
            f"peak RSS of the no-change process, {n} files",
            f"{out['rss_mb']:.0f} MB",
            "",
            "stand-in vectors (384-d) held in memory",
        ),
    ]


# -- memory --------------------------------------------------------------------------------


def indexing_memory(work: Path, small: Path, n_small: int, n_big: int, large_mb: int) -> list[Row]:
    """Peak RSS of a keyword-only first index on folders from 100 files to ``n_big`` files,
    a folder of ``large_mb`` MB, and one large DOCX: each in a child of its own."""
    cases = [
        ("100 files", notes_folder(work, 100)),
        (f"{n_small} files", small),
        ("one large DOCX", big_docx(work)),
    ]
    if n_big:
        cases.append((f"{n_big} files", notes_folder(work, n_big)))
    if large_mb:
        cases.append((f"{large_mb} MB of Markdown and text", large_folder(work, large_mb)))
    rows = []
    for label, folder in cases:
        out = json.loads(_child("memory", folder, work / f"memory-{folder.name}"))
        rows.append(
            Row(
                SECTION,
                f"peak RSS of a first index (keyword only), {label}",
                f"{out['self_mb']:.0f} MB",
                "no growth with the folder",
                f"reader process {out['reader_mb']:.0f} MB; {out['files']} files, "
                f"{out['chunks']} chunks in {out['seconds']:.0f} s",
            )
        )
    return rows


# -- child processes: each measurement in a fresh interpreter --------------------------------


def _child(what: str, folder: Path, index: Path, *extra: str) -> str:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.perf_indexing",
            what,
            str(folder),
            str(index),
            *extra,
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    return proc.stdout


def _main(what: str, folder: Path, index: Path, *extra: str) -> dict[str, object]:
    import statistics

    from micro_rag_mcp.core.errors import ModelUnavailable
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.local.engine import Engine
    from tests.fakes import FakeEmbedder

    settings = Settings(data_folder=folder, index_folder=index, watch="off")
    if what == "encoder-vs-pass":
        keys, rounds = [k for k in extra[0].split(",") if k], int(extra[1])
        model, int8, _ = (extra[2] if len(extra) > 2 else "minilm").partition("-int8")
        precision = "int8" if int8 else "fp32"
        settings = Settings(folder, index, watch="off", model=model, model_precision=precision)  # type: ignore[arg-type]
        return run_ways(settings, index, variants(keys), rounds, encoder=model)
    if what == "build":
        engine = Engine(settings, lambda: FakeEmbedder(384, "stand-in-384"))
        engine.load_model()
        report = engine.reindex()
        engine.stop()
        return {"files": report.files_added, "chunks": report.chunks_total}
    if what == "no-change":
        engine = Engine(settings, lambda: FakeEmbedder(384, "stand-in-384"))
        engine.load_model()
        seconds = []
        for _ in range(5):
            started = time.perf_counter()
            report = engine.reindex()
            seconds.append(time.perf_counter() - started)
            assert report.chunks_embedded == 0 and report.files_unchanged > 0
        engine.stop()
        rss = peak_rss_mb()
        best, median = min(seconds), statistics.median(seconds)
        return {"runs": 5, "best_s": best, "median_s": median, "rss_mb": rss}
    if what == "memory":

        def no_model() -> FakeEmbedder:
            raise ModelUnavailable("keyword only")

        shutil.rmtree(index, ignore_errors=True)
        engine = Engine(settings, no_model)
        started = time.perf_counter()
        with ChildrenPeak() as reader:
            report = engine.reindex()
        elapsed = time.perf_counter() - started
        engine.stop()
        return {
            "self_mb": peak_rss_mb(),
            "reader_mb": reader.mb,
            "chunks": report.chunks_total,
            "files": report.files_added,
            "seconds": elapsed,
        }
    if what == "profile":
        return profile(settings, index)
    raise SystemExit(f"unknown measurement {what}")


if __name__ == "__main__":
    print(json.dumps(_main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), *sys.argv[4:])))
