"""The indexing section of ``bench.perf``: a first index against the encoder's own speed,
start-up through the MCP interface, no-change reindex, and memory while indexing.

- encoder alone vs. end-to-end first index on the same real folder, in chunks/s: the
  end-to-end pass is the server's own (``Engine.reindex`` with the real model, loaded
  beforehand); the encoder alone then embeds that index's chunk texts in one call; two
  rounds of each, alternating, the best of each;
- the server over stdio on a generated folder (``--indexing-files``, fresh index): time
  from process start to the MCP handshake and to the first keyword answer, and with
  ``--indexing-full`` to all vectors (minutes: the encoder does every chunk);
- no-change reindex on the generated folders, in process, nothing to embed (the cached
  index carries vectors of a stand-in encoder, so reconciling them is real work);
- first keyword answer from the server on ``--indexing-big`` files, on the cached index;
- peak RSS of a reindex pass (its process and its reader process) on small and big
  folders and on one very large DOCX.

Generated folders and their indexes are cached under ``--work``: the first run builds the
big one once (several minutes), later runs reuse it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bench.perf_common import ChildrenPeak, Row, peak_rss_mb

if TYPE_CHECKING:
    import numpy.typing as npt

    from micro_rag_mcp.embedder import OnnxEmbedder
    from micro_rag_mcp.pipeline import Steps
    from micro_rag_mcp.settings import Settings

SECTION = "indexing"
WORDS = [
    "ledger",
    "harbor",
    "invoice",
    "policy",
    "travel",
    "expense",
    "report",
    "quarter",
    "revenue",
    "margin",
    "supplier",
    "contract",
    "river",
    "stone",
    "market",
    "orchard",
    "pump",
    "valve",
    "turbine",
    "sensor",
    "audit",
    "payroll",
    "lease",
    "tariff",
    "freight",
    "cargo",
    "vessel",
    "dock",
    "crane",
    "permit",
    "zoning",
    "survey",
    "parcel",
    "boundary",
    "easement",
]
REPO = Path(__file__).resolve().parent.parent


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("indexing")
    g.add_argument(
        "--indexing-files", type=int, default=10_000, help="files of the generated folder"
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
                    name, folder, work, args.indexing_levers, args.indexing_rounds
                )
                if args.indexing_profile:
                    rows += stage_profile(name, folder, work)
    small = notes_folder(work, n_files)
    if "start" in parts:
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


def made_once(folder: Path, make: Callable[[Path], None]) -> Path:
    """``folder``, made by ``make`` unless an earlier run made all of it."""
    done = folder / ".complete"  # hidden: never indexed
    if not done.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        make(folder)
        done.write_text("")
    return folder


def notes_folder(work: Path, n: int) -> Path:
    """``n`` one-paragraph text files, 100 to a folder; made once, then reused."""
    return made_once(work / f"notes-{n}", lambda folder: _write_notes(folder, n))


def _write_notes(folder: Path, n: int) -> None:
    rng = random.Random(n)
    for i in range(n):
        sub = folder / f"d{i // 100:04d}"
        if i % 100 == 0:
            sub.mkdir()
        words = " ".join(rng.choice(WORDS) for _ in range(90))
        (sub / f"note{i:06d}.txt").write_text(f"Note {i}, item{i}. {words}.\n")
    old = time.time() - 3600  # stamps older than the racy window
    for path in folder.rglob("*.txt"):
        os.utime(path, (old, old))


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
    """Where the time of a first index goes: each stage alone, as a share of their sum."""
    out = json.loads(_child("profile", folder, work / f"profile-{name}"))
    seconds: dict[str, float] = out["seconds"]
    total = sum(seconds.values())
    return [
        Row(
            SECTION,
            f"first index stage: {stage}, {name}",
            f"{s:.1f} s",
            "",
            f"{100 * s / total:.0f}% of the stages' sum; {out['chunks']} chunks",
        )
        for stage, s in seconds.items()
    ]


def encoder_vs_pass(name: str, folder: Path, work: Path, keys: str, rounds: int) -> list[Row]:
    out = json.loads(_child("encoder-vs-pass", folder, work / f"pass-{name}", keys, str(rounds)))
    encoder = out["encoder_rounds"]
    loads = ", ".join(f"{e['load']:.1f}" for e in encoder)
    rows = [
        Row(
            SECTION,
            f"encoder alone, {name}",
            f"{out['encoder_cps']:.1f} chunks/s",
            "",
            f"{out['files']} files, {out['chunks']} chunks; best of {len(encoder)} "
            f"(load average {loads}); {out['encoder_cpu_cps']:.1f} chunks per CPU-s",
        )
    ]
    for way, got in out["ways"].items():
        label = "" if way == "as shipped" else f", {way}"
        loads = ", ".join(f"{p['load']:.1f}" for p in got["rounds"])
        rows.append(
            Row(
                SECTION,
                f"first index end to end, {name}{label}",
                f"{got['cps']:.1f} chunks/s",
                ">= 0.85 x encoder",
                f"ratio {got['ratio']:.2f}; per CPU-s {got['cpu_ratio']:.2f}; best of "
                f"{len(got['rounds'])} (load average {loads})",
            )
        )
    best = out["ways"]["as shipped"]["best_pass"]
    rest = best["seconds"] - best["embedding_s"] - best["counting_s"]
    difference = out["ways"]["as shipped"]["max_vector_difference"]
    return rows + [
        Row(
            SECTION,
            f"first index: the encoder's share of the best pass, {name}",
            f"{100 * best['embedding_s'] / best['seconds']:.0f}%",
            "",
            f"of {best['seconds']:.1f} s: encoder calls {best['embedding_s']:.1f} s, "
            f"counting tokens {best['counting_s']:.1f} s, the rest {rest:.1f} s",
        ),
        Row(
            SECTION,
            f"first index: vectors of the pass against the encoder alone, {name}",
            f"{difference:.1e}",
            "",
            "largest difference of a component (unit vectors)",
        ),
    ]


# -- the server over stdio ---------------------------------------------------------------


def server_start(folder: Path, index: Path, n: int, *, full: bool, fresh: bool = True) -> list[Row]:
    """Times from process start, through the MCP interface."""
    import anyio

    if fresh:
        shutil.rmtree(index, ignore_errors=True)
    times = anyio.run(_time_server, folder, index, n, full)
    kind = "fresh index" if fresh else "existing catalog, no vectors"
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
        + ["--inst", "bench", "--index-folder", str(index), "--no-watch"],
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


def large_folder(work: Path, mb: int) -> Path:
    """About ``mb`` MB of text, made once: Markdown files of about 100 kB, 100 to a
    folder, and four plain text files that hold a sixteenth of it between them."""
    return made_once(work / f"large-{mb}mb", lambda folder: _write_large(folder, mb))


def _write_large(folder: Path, mb: int) -> None:
    rng = random.Random(mb)
    pool = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))) for _ in range(997)]
    total = mb * 1024 * 1024
    big = total // 16 // 4
    for i in range(4):
        (folder / f"log{i}.txt").write_text(_filler(rng, pool, f"log{i}", big, heading=""))
    for i in range((total - 4 * big) // 100_000):
        sub = folder / f"d{i // 100:04d}"
        sub.mkdir(exist_ok=True)
        (sub / f"doc{i:06d}.md").write_text(_filler(rng, pool, f"doc{i}", 100_000, heading="## "))


def _filler(rng: random.Random, pool: list[str], tag: str, size: int, *, heading: str) -> str:
    """About ``size`` characters of paragraphs, each with a word of its own; a heading (if
    any) every eight paragraphs."""
    parts: list[str] = []
    written = 0
    while written < size:
        k = len(parts)
        if heading and k % 9 == 0:
            parts.append(f"{heading}{tag} part {k // 9}\n\n")
        else:
            parts.append(f"{tag}x{k} {rng.choice(pool)}.\n\n")
        written += len(parts[-1])
    return "".join(parts)


def big_docx(work: Path, paragraphs: int = 20_000) -> Path:
    """A folder with one DOCX of about 870 pages (``paragraphs`` paragraphs), made once."""
    folder = work / "docx-large"
    path = folder / "handbook.docx"
    if path.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    import docx

    rng = random.Random(7)
    document = docx.Document()
    for i in range(paragraphs):
        if i % 200 == 0:
            document.add_heading(f"Chapter {i // 200}", level=1)
        document.add_paragraph(" ".join(rng.choice(WORDS) for _ in range(40)))
    tmp = folder / ".handbook.docx.tmp"
    document.save(str(tmp))
    os.replace(tmp, path)
    return folder


# -- child processes: each measurement in a fresh interpreter --------------------------------


def _child(what: str, folder: Path, index: Path, *extra: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.perf_indexing", what, str(folder), str(index), *extra],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    return proc.stdout


def _main(what: str, folder: Path, index: Path, *extra: str) -> dict[str, object]:
    import statistics

    from micro_rag_mcp.engine import Engine
    from micro_rag_mcp.errors import ModelUnavailable
    from micro_rag_mcp.settings import Settings
    from tests.fakes import FakeEmbedder

    settings = Settings(data_folder=folder, index_folder=index, watch="off")
    if what == "encoder-vs-pass":
        keys, rounds = [k for k in extra[0].split(",") if k], int(extra[1])
        return _encoder_vs_pass(settings, index, variants(keys), rounds)
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
        seconds = time.perf_counter() - started
        engine.stop()
        return {
            "self_mb": peak_rss_mb(),
            "reader_mb": reader.mb,
            "chunks": report.chunks_total,
            "files": report.files_added,
            "seconds": seconds,
        }
    if what == "profile":
        return _profile(settings, index)
    raise SystemExit(f"unknown measurement {what}")


class _TimedModel:
    """The model, with the time of its calls added up: how long the encoder worked
    within a pass, and how long counting tokens for the steps' order took."""

    def __init__(self, inner: OnnxEmbedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.embedding_s = 0.0
        self.counting_s = 0.0

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        started = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.embedding_s += time.perf_counter() - started

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.inner.embed_query(text)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        started = time.perf_counter()
        try:
            return self.inner.token_counts(texts)
        finally:
            self.counting_s += time.perf_counter() - started


class _CharacterOrderedModel(_TimedModel):
    """The model without its token counts: the pass orders its steps by characters."""

    token_counts = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Variant:
    """A way of running the pass, for a lever measured beside the shipped one."""

    steps: Steps
    by_tokens: bool = True  # False: steps ordered by characters, as they were

    def model(self, inner: OnnxEmbedder) -> _TimedModel:
        return _TimedModel(inner) if self.by_tokens else _CharacterOrderedModel(inner)


def levers() -> dict[str, tuple[str, Variant]]:
    """Each lever alone, by its key for ``--indexing-levers``: (label, way)."""
    from micro_rag_mcp.pipeline import Steps

    return {
        "before": (
            "before: steps of 16 from windows of 128 ordered by characters",
            Variant(Steps(16, 128, 0), by_tokens=False),
        ),
        "tokens": ("steps of 16 from windows of 128 ordered by tokens", Variant(Steps(16, 128))),
        "steps32": ("steps of 32 from windows of 128 ordered by tokens", Variant(Steps(32, 128))),
        "window": ("steps of 16 from windows of 1024 ordered by tokens", Variant(Steps(16, 1024))),
        "nice": ("as shipped, reading at nice 10", Variant(Steps(reading_nice=10))),
    }


def variants(keys: Sequence[str]) -> dict[str, Variant]:
    """The levers named by ``keys``, then the shipped pass."""
    from micro_rag_mcp.pipeline import DEFAULT_STEPS

    known = levers()
    unknown = sorted(set(keys) - set(known))
    if unknown:
        raise SystemExit(
            f"--indexing-levers: unknown {', '.join(unknown)}; from {', '.join(known)}"
        )
    return dict(known[k] for k in keys) | {"as shipped": Variant(DEFAULT_STEPS)}


def _cpu_s() -> float:
    """CPU seconds of this process and of its children that ended (the reader process)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _encoder_vs_pass(
    settings: Settings, index: Path, ways: dict[str, Variant], rounds: int = 2
) -> dict[str, object]:
    """``rounds`` rounds of a whole first index each way and of the encoder alone on its
    chunks (after every second pass), alternating: machine load hits all alike.

    For each way: chunks per second and per CPU second (which other processes' load
    inflates least), where its best pass's time went (the encoder's calls, counting
    tokens, the rest), and the largest difference between a vector of the pass and the
    encoder's own.
    """
    from micro_rag_mcp.embedder import load_embedder
    from micro_rag_mcp.engine import Engine

    embedder = load_embedder(threads=len(os.sched_getaffinity(0)))
    passes: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
    encoder: list[dict[str, float]] = []
    difference: dict[str, float] = {}
    for _ in range(rounds):
        for i, (name, way) in enumerate(ways.items()):
            shutil.rmtree(index, ignore_errors=True)
            timed = way.model(embedder)
            engine = Engine(settings, lambda model=timed: model, steps=way.steps)
            engine.load_model()
            load, cpu = os.getloadavg()[0], _cpu_s()
            started = time.perf_counter()
            report = engine.reindex()
            seconds = time.perf_counter() - started
            engine.stop()
            chunks = report.chunks_embedded
            passes[name].append(
                {
                    "cps": chunks / seconds,
                    "cpu_cps": chunks / (_cpu_s() - cpu),
                    "seconds": seconds,
                    "embedding_s": timed.embedding_s,
                    "counting_s": timed.counting_s,
                    "load": load,
                }
            )
            if i % 2 == 1 or i == len(ways) - 1:
                alone, cps = _encoder_alone(embedder, index)
                encoder.append(cps)
            else:
                alone = None
            if alone is not None:
                difference[name] = max(difference.get(name, 0.0), _vector_difference(index, alone))
    best_encoder = max(e["cps"] for e in encoder)
    best_encoder_cpu = max(e["cpu_cps"] for e in encoder)
    out: dict[str, object] = {
        "files": report.files_added,
        "chunks": report.chunks_embedded,
        "encoder_cps": best_encoder,
        "encoder_cpu_cps": best_encoder_cpu,
        "encoder_rounds": encoder,
        "ways": {},
    }
    for name, runs in passes.items():
        best = max(runs, key=lambda p: p["cps"])
        out["ways"][name] = {  # type: ignore[index]
            "cps": best["cps"],
            "ratio": best["cps"] / best_encoder,
            "cpu_ratio": max(p["cpu_cps"] for p in runs) / best_encoder_cpu,
            "best_pass": best,
            "rounds": runs,
            "max_vector_difference": difference.get(name),
        }
    return out


def _encoder_alone(
    embedder: OnnxEmbedder, index: Path
) -> tuple[dict[int, npt.NDArray[np.float32]], dict[str, float]]:
    """The encoder alone on the chunks of the index the last pass made, in one call."""
    ids, texts = _embedded_texts(index)
    load, cpu = os.getloadavg()[0], _cpu_s()
    started = time.perf_counter()
    vectors = embedder.embed_documents(texts)
    seconds = time.perf_counter() - started
    rates = {"cps": len(texts) / seconds, "cpu_cps": len(texts) / (_cpu_s() - cpu), "load": load}
    return dict(zip(ids, vectors, strict=True)), rates


def _vector_difference(index: Path, alone: dict[int, npt.NDArray[np.float32]]) -> float:
    """The largest difference of a component between the saved vectors and ``alone``."""
    import faiss

    saved = faiss.read_index(str(index / "faiss.index"))
    ids = faiss.vector_to_array(saved.id_map)
    vectors = faiss.downcast_index(saved.index).reconstruct_n(0, saved.ntotal)
    return max(float(np.abs(v - alone[int(c)]).max()) for c, v in zip(ids, vectors, strict=True))


def _profile(settings: object, index: Path, sample: int = 256) -> dict[str, object]:
    """Each stage of a first index alone, in seconds over the whole folder: reading (the
    reader process: parse and round trip), chunking, storing (SQLite, FTS5, fsync),
    tokenizing, and the encoder (timed on ``sample`` chunks, scaled to all)."""
    from micro_rag_mcp.catalog import Catalog, FileRecord
    from micro_rag_mcp.embedder import load_embedder
    from micro_rag_mcp.indexer import _extract, embedding_text, scan_rules
    from micro_rag_mcp.isolation import IsolatedReader
    from micro_rag_mcp.scanner import scan
    from micro_rag_mcp.settings import Settings

    assert isinstance(settings, Settings)
    files = scan(scan_rules(settings)).files
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    with IsolatedReader(settings.data_folder, settings.read_timeout_s) as reader:
        docs = [(f, reader.read(f.path, max_bytes=settings.max_file_bytes)) for f in files]
    seconds["reading"] = time.perf_counter() - started
    started = time.perf_counter()
    chunked = [(f, _extract(doc, f.path, settings)[1]) for f, doc in docs]
    seconds["chunking"] = time.perf_counter() - started
    shutil.rmtree(index, ignore_errors=True)
    index.mkdir(parents=True)
    catalog = Catalog.open(index / "catalog.sqlite3")
    started = time.perf_counter()
    for f, chunks in chunked:
        catalog.store_file(FileRecord(f.rel, ".x", f.size, f.mtime_ns, "-", "ok", None), chunks)
    seconds["storing"] = time.perf_counter() - started
    catalog.close()
    texts = [embedding_text(c.title, c.text) for _, chunks in chunked for c in chunks]
    embedder = load_embedder(threads=len(os.sched_getaffinity(0)))
    started = time.perf_counter()
    embedder._tokenizer.encode_batch(texts)  # the encoder's own first stage, alone
    seconds["tokenizing"] = time.perf_counter() - started
    part = texts[:: max(1, len(texts) // sample)][:sample]
    started = time.perf_counter()
    embedder.embed_documents(part)
    per_chunk = (time.perf_counter() - started) / len(part)
    seconds["encoder"] = per_chunk * len(texts) - seconds["tokenizing"]
    return {"files": len(files), "chunks": len(texts), "seconds": seconds}


def _embedded_texts(index: Path) -> tuple[list[int], list[str]]:
    """Each chunk id of the index and what the pass embedded for it, in chunk order."""
    import sqlite3

    from micro_rag_mcp.indexer import embedding_text

    conn = sqlite3.connect(index / "catalog.sqlite3")
    rows = conn.execute("SELECT id, title, text FROM chunks ORDER BY id").fetchall()
    conn.close()
    return [cid for cid, _, _ in rows], [embedding_text(title, text) for _, title, text in rows]


if __name__ == "__main__":
    print(json.dumps(_main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), *sys.argv[4:])))
