"""Memory, a section of ``bench.perf``: idle servers' RSS and PSS, and the model alone.

    .venv/bin/python -m bench.perf --sections memory
    .venv/bin/python -m bench.perf_memory            # this section alone

RSS counts every page a process has in memory; PSS divides each shared page (the model's
weights mapped from the package file, the libraries) among the processes that map it, so
the PSS of several processes adds up to what they cost together. Figures are the server's
process and its children (the reader process), read from ``/proc/PID/smaps_rollup``.

- The model alone: a process that only loads the embedder and embeds one batch of 32
  chunks of 256 tokens (the largest a pass runs), as it was before (weights copied into
  the graph) and at each step taken since, then five such processes side by side.
- One idle server at 10k and 100k chunks: each a real ``micro-rag-mcp`` over stdio that has
  finished its start-up pass and answered one search. The folders' text and vectors are
  synthetic (labelled so): written by the project's own indexer with random unit vectors
  filed under the real model's vector space, so the server finds them up to date and
  embeds nothing (checked: the vector file is not rewritten).
- Five idle servers on five folders of real-model text (one paragraph per file), started
  together; each indexes its folder with the real model, then answers one search.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from bench import work_folder
from bench.perf_common import Row, peak_rss_mb, print_table

SECTION = "memory"
MB = 1024 * 1024
BATCH_TEXTS = [f"word{i} alpha beta " * 100 for i in range(32)]  # 32 chunks of 256 tokens


# -- measuring -------------------------------------------------------------------------


def memory_kb(pid: int) -> dict[str, int]:
    """Rss, Pss and Anonymous of one process, in kB."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Rss", "Pss", "Anonymous"):
            out[key] = int(rest.split()[0])
    return out


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def tree_mb(pid: int) -> tuple[float, float]:
    """RSS and PSS of a process and its descendants, in MB."""
    rss = pss = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            m = memory_kb(member)
            rss, pss = rss + m["Rss"], pss + m["Pss"]
    return rss / 1024, pss / 1024


def tree_peak_mb(pid: int) -> float:
    """The peak RSS (``VmHWM``) of a process, plus its live descendants', in MB: an upper
    bound of the tree's peak (each member's own peak, whenever it came)."""
    return sum(peak_rss_mb(member) for member in process_tree(pid))


def _mb(value: float) -> str:
    return f"{value:.0f} MB"


# -- folders ------------------------------------------------------------------------------

_WORDS = [
    "".join(random.Random(i).choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3 + i % 7))
    for i in range(4000)
]


def _paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


CHUNKS_PER_PARAGRAPH = 1.18  # as the default chunking cuts these paragraphs (measured)


def write_folder(data: Path, files: int, paragraphs: int, seed: int) -> None:
    """``files`` text files of ``paragraphs`` paragraphs of ~130 words (one chunk each)."""
    rng = random.Random(seed)
    data.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        text = "\n\n".join(_paragraph(rng, 120) for _ in range(paragraphs))
        (data / f"doc{i:05d}.txt").write_text(text + "\n", encoding="utf-8")


def server_argv(data: Path, model: str = "minilm") -> list[str]:
    """A server's flags; ``model`` is an encoder, or one at a precision (``minilm-int8``,
    ``minilm-fp32``, ``e5-small-int8``)."""
    encoder, dash, precision = model.rpartition("-")
    if not dash or precision not in ("fp32", "int8"):
        encoder, dash, precision = model, "", ""
    return [
        "--data-folder", str(data), "--title", "bench", "--inst", "Search the bench folder.",
        "--model", encoder, *(["--model-precision", precision] if dash else []),
    ]  # fmt: skip


class SyntheticVectors:
    """Random unit vectors filed under the real model's vector space (no model is run)."""

    def __init__(self) -> None:
        from micro_rag_mcp.model.embedder import DIMENSION, MODEL_ID

        self.model_id, self.dimension = MODEL_ID, DIMENSION
        self._rng = np.random.default_rng(0)

    def embed_documents(self, texts: Sequence[str]) -> Any:
        v = self._rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def embed_query(self, text: str) -> Any:
        return self.embed_documents([text])[0]


def synthetic_index(work: Path, chunks: int) -> Path:
    """A folder of about ``chunks`` chunks, indexed with synthetic vectors (reused if built)."""
    from micro_rag_mcp.local.engine import Engine
    from micro_rag_mcp.serve.main import build_parser, settings_from_args

    per_file = 10 if chunks <= 20_000 else 50
    data = work / f"memory-synthetic-{chunks}"
    done = work / f"memory-synthetic-{chunks}.built"
    if done.exists():
        return data
    files = max(1, round(chunks / (per_file * CHUNKS_PER_PARAGRAPH)))
    write_folder(data, files, per_file, seed=chunks)
    settings = settings_from_args(build_parser().parse_args(server_argv(data)))
    engine = Engine(settings, SyntheticVectors)
    engine.load_model()
    try:
        engine.reindex()
    finally:
        engine.stop()
    done.write_text("built by bench.perf_memory with synthetic vectors\n")
    return data


# -- servers --------------------------------------------------------------------------


def _server_pid(data: Path) -> int:
    """The pid of the server process serving ``data`` (found by its command line)."""
    wanted = str(data).encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            argv = cmdline.read_bytes().split(b"\0")
            if b"micro_rag_mcp" in argv and wanted in argv:
                return int(cmdline.parent.name)
    raise RuntimeError(f"no server process found for {data}")


async def _wait_idle(client: Any, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        out = (await client.call_tool("search", {"query": "status"})).structured_content
        index: dict[str, Any] = out["index"]
        done = index["chunks_with_vectors"] == index["chunks_total"]
        if not index["indexing"] and index["model"] == "ready" and done:
            return index
        if time.monotonic() > deadline:
            raise TimeoutError(f"the server never became idle: {index}")
        await anyio.sleep(0.5)


async def _idle_servers(
    folders: Sequence[Path], timeout: float, source: Path | None, model: str
) -> list[tuple[float, float, float, dict[str, Any]]]:
    """Start one server per folder together; once each is idle and answered a search,
    the RSS, PSS and peak RSS of each (with its children) and its index state."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for data in folders:
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "micro_rag_mcp", *server_argv(data, model)],
                env=env,
            )
            log = stack.enter_context(data.with_suffix(".log").open("w", encoding="utf-8"))
            transport = stdio_client(params, errlog=log)  # the server's log, kept beside
            clients.append(await stack.enter_async_context(Client(transport)))
        states: list[dict[str, Any]] = [{} for _ in folders]

        async def settle(i: int) -> None:
            states[i] = await _wait_idle(clients[i], timeout)
            await clients[i].call_tool("search", {"query": "alpha beta", "top_k": 5})

        async with anyio.create_task_group() as group:
            for i in range(len(folders)):
                group.start_soon(settle, i)
        pairs = zip(folders, states, strict=True)
        measured = []
        for data, state in pairs:
            pid = _server_pid(data)
            measured.append((*tree_mb(pid), tree_peak_mb(pid), state))
        return measured


def idle_servers(
    folders: Sequence[Path], timeout: float, source: Path | None = None, model: str = "minilm"
) -> list[tuple[float, float, float, dict[str, Any]]]:
    result: list[tuple[float, float, float, dict[str, Any]]] = anyio.run(
        _idle_servers, folders, timeout, source, model
    )
    return result


def one_server_rows(work: Path, sizes: Sequence[int], source: Path | None) -> list[Row]:
    rows = []
    targets = {10_000: "<= 250 MB RSS", 100_000: "<= 500 MB RSS"}
    for chunks in sizes:
        data = synthetic_index(work, chunks)
        ((rss, pss, _peak, state),) = idle_servers([data], timeout=600, source=source)
        # The server may save the vectors again (it builds the search graph of a large
        # folder once), but it must embed nothing: its log says so when it does.
        if re.search(r": embedded \d+ chunks", data.with_suffix(".log").read_text("utf-8")):
            raise RuntimeError(f"the server re-embedded the synthetic index in {data}")
        rows.append(
            Row(
                SECTION,
                f"one idle server, {state['chunks_total']:,} chunks (RSS / PSS)",
                f"{_mb(rss)} / {_mb(pss)}",
                targets.get(chunks, ""),
                "synthetic text and vectors; nothing re-embedded",
            )
        )
    return rows


def instance_rows(
    work: Path, instances: int, files: int, source: Path | None, model: str = "minilm"
) -> list[Row]:
    folders = []
    for i in range(instances):
        data = work / f"memory-folder-{files}-{i}"
        if not data.exists():
            write_folder(data, files, 1, seed=1000 + i)
        shutil.rmtree(data / "index", ignore_errors=True)  # each run embeds from scratch
        folders.append(data)
    measured = idle_servers(folders, timeout=7200, source=source, model=model)
    rss = sum(m[0] for m in measured)
    pss = sum(m[1] for m in measured)
    chunks = sum(m[3]["chunks_total"] for m in measured)
    return [
        Row(
            SECTION,
            f"{instances} idle servers, {instances} folders of {files} files, --model "
            f"{model} (RSS / PSS)",
            f"{_mb(rss)} / {_mb(pss)}",
            "<= 250 MB" if instances == 1 else "<= 1.0 GB together",
            f"{chunks:,} chunks embedded by the real model at start-up; "
            f"PSS each {', '.join(_mb(m[1]) for m in measured)}",
        ),
        Row(
            SECTION,
            f"peak RSS while indexing, each server with its reader, --model {model}",
            ", ".join(_mb(m[2]) for m in measured),
            "<= 500 MB",
            "VmHWM of the server plus its reader's, read once idle",
        ),
    ]


# -- the section --------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--memory-chunks",
        default="10000,100000",
        metavar="LIST",
        help="chunks of the synthetic folders one idle server is measured on",
    )
    parser.add_argument("--memory-instances", type=int, default=5, help="servers side by side")
    parser.add_argument("--memory-files", type=int, default=300, help="files per folder")
    parser.add_argument(
        "--memory-parts",
        default="one,five",
        metavar="LIST",
        help="of: one (one idle server per size), five (several servers side by side); "
        "the model alone is measured by bench.encoders",
    )
    parser.add_argument(
        "--memory-model",
        default="minilm",
        help="the encoder the servers of the 'five' part index with (minilm, e5-small; "
        "with -fp32 or -int8, e.g. e5-small-int8: at that --model-precision)",
    )
    parser.add_argument(
        "--memory-server-src",
        type=Path,
        help="run the servers from this source folder (e.g. an older commit's src), "
        "to measure before and after",
    )


def run(args: argparse.Namespace) -> list[Row]:
    work = Path(args.work)
    sizes = [int(s) for s in args.memory_chunks.split(",") if s.strip()]
    instances, files = args.memory_instances, args.memory_files
    if args.quick:
        sizes, instances, files = [min(sizes)], min(instances, 2), min(files, 30)
    source = args.memory_server_src
    parts: dict[str, Callable[[], list[Row]]] = {
        "one": lambda: one_server_rows(work, sizes, source),
        "five": lambda: instance_rows(work, instances, files, source, args.memory_model),
    }
    chosen = [p.strip() for p in args.memory_parts.split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(parts))
    if unknown:
        raise SystemExit(f"--memory-parts: unknown {', '.join(unknown)}; from {', '.join(parts)}")
    steps = [parts[p] for p in chosen]
    rows: list[Row] = []
    for step in steps:
        started = time.perf_counter()
        rows.extend(step())
        elapsed = time.perf_counter() - started
        print(f"# memory: {rows[-1].measure}: {elapsed:.0f} s", file=sys.stderr)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--work", type=Path, default=work_folder("perf"))
    parser.add_argument("--quick", action="store_true")
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    print_table(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
