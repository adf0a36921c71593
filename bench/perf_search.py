"""Search latency at 10k, 100k (and 1M) chunks, exact and approximate: a ``bench.perf`` section.

    .venv/bin/python -m bench.perf --sections search [--search-sizes 10000,100000,1000000]

Every search goes through ``Engine.search``, the path of the MCP ``search`` tool. The
folders are synthetic (labelled so): files of ten chunks of Zipf-distributed pseudo-words,
each file with one token of its own, written with ``Catalog.store_file``; vectors with
cluster structure (300 topics of 30 subtopics each, so a query has graded neighbours)
written with ``VectorStore``. The files themselves are not on disk (a search stats its
hits' files either way). Queries are new points of the same clusters, with three
mid-frequency words as their text; a table maps each query text to its vector, so the
times exclude the model (measured on its own in the last row, when the model is there).

Each folder is built once under ``--work`` and reused. Exact: an engine whose threshold
is above the folder's size. Approximate: the graph (``ann.py``), forced below its
threshold at 10k. Recall@10 compares the approximate top 10 with the exact top 10, for
the vector channel alone and for the hybrid results.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.perf_common import Row, percentiles_ms
from micro_rag_mcp.core.records import FileRecord, NewChunk
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.layout import IndexPaths
from micro_rag_mcp.local.vectors.graph import APPROXIMATE_FROM
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.model.handle import vector_space
from micro_rag_mcp.search.fusion import SearchParams

logger = logging.getLogger("bench")

SECTION = "search"
DIMENSION = 384
CHUNKS_PER_FILE = 10
WORDS_PER_CHUNK = 60
VOCABULARY = 30_000
TOPICS, SUBTOPICS = 300, 30
RECIPE = 1  # bump when the synthetic folder changes, so cached folders are rebuilt
SYNTHETIC = "synthetic text and vectors"
NEVER = 1 << 62  # an approximate_from no folder reaches: exact search


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("search section")
    g.add_argument(
        "--search-sizes",
        default="10000,100000",
        help="chunk counts to measure (default 10000,100000; add 1000000 for the million)",
    )
    g.add_argument("--search-queries", type=int, default=200, help="queries per measure")
    g.add_argument(
        "--search-model",
        action="store_true",
        help="embed each query with the real model too: its time is counted, the table's "
        "vector is still the one searched (default: the model is left out)",
    )


def run(args: argparse.Namespace) -> list[Row]:
    sizes = [int(s) for s in args.search_sizes.split(",") if s.strip()]
    queries = args.search_queries
    if args.quick:
        sizes, queries = [min(sizes)], min(queries, 50)
    rows: list[Row] = []
    model = _real_model() if args.search_model else None
    for size in sizes:
        folder = build_folder(args.work / f"search-{size}", size)
        rows.extend(measure(folder, size, queries, model))
    rows.extend(model_row())
    return rows


# -- the synthetic folder --------------------------------------------------------------


@functools.cache
def _words() -> list[str]:
    """Pronounceable pseudo-words, ranked: word 0 is the most frequent."""
    rng = np.random.default_rng(7)
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        n = int(rng.integers(2, 5))
        word = "".join(
            consonants[rng.integers(len(consonants))] + vowels[rng.integers(len(vowels))]
            for _ in range(n)
        )
        words[word] = None
    return list(words)


def _zipf_probabilities() -> npt.NDArray[np.float64]:
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** 1.07
    return weights / weights.sum()


@functools.cache
def _centers() -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    rng = np.random.default_rng(0)
    topics = rng.standard_normal((TOPICS, DIMENSION)).astype(np.float32)
    subtopics = rng.standard_normal((TOPICS * SUBTOPICS, DIMENSION)).astype(np.float32)
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    subtopics /= np.linalg.norm(subtopics, axis=1, keepdims=True)
    return topics, subtopics


def clustered_vectors(count: int, seed: int) -> npt.NDArray[np.float32]:
    """Unit vectors: 35 % topic, 30 % subtopic, the rest noise (in variance)."""
    topics, subtopics = _centers()
    rng = np.random.default_rng(seed)
    sub = rng.integers(0, TOPICS * SUBTOPICS, count)
    noise = rng.standard_normal((count, DIMENSION)).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    v = np.sqrt(0.35) * topics[sub // SUBTOPICS] + np.sqrt(0.30) * subtopics[sub] + noise * 0.59
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


class TableEmbedder:
    """Query texts mapped to prepared vectors; any other text gets a fixed random one.

    With ``model``, each query is embedded by it as well, and the result thrown away: a
    search then takes the time of the real query embedding.
    """

    model_id = "bench-synthetic-384"
    dimension = DIMENSION

    def __init__(
        self, table: dict[str, npt.NDArray[np.float32]], model: Embedder | None = None
    ) -> None:
        self.table = table
        self.model = model

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self.embed_query(t) for t in texts])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        if self.model is not None:
            self.model.embed_query(text)
        if text in self.table:
            return self.table[text]
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "little")
        return clustered_vectors(1, seed)[0]


def build_folder(work: Path, size: int) -> Path:
    """The synthetic folder of ``size`` chunks under ``work``, built unless already there."""
    marker = work / "bench.json"
    expected = {"recipe": RECIPE, "chunks": size}
    if marker.exists() and json.loads(marker.read_text()) == expected:
        return work
    building = work / "building.json"  # a build that was interrupted goes on where it was
    if not (building.exists() and json.loads(building.read_text()) == expected):
        shutil.rmtree(work, ignore_errors=True)
        (work / "docs" / "index").mkdir(parents=True)
        building.write_text(json.dumps(expected))
    paths = IndexPaths(work / "docs" / "index")
    started = time.perf_counter()
    _write_catalog(paths, size)
    _write_vectors(paths, size)
    marker.write_text(json.dumps(expected))
    building.unlink()
    print(
        f"# search: built {size} chunks in {time.perf_counter() - started:.0f} s", file=sys.stderr
    )
    return work


def _write_catalog(paths: IndexPaths, size: int) -> None:
    words = np.array(_words())
    catalog = Catalog.open(paths.catalog)
    catalog.set_meta("vector_model", vector_space(TableEmbedder({})))
    probabilities = _zipf_probabilities()
    done = len(catalog.files())  # each file is one transaction: whole files only
    try:
        for file_no in range(done, size // CHUNKS_PER_FILE):
            rng = np.random.default_rng([size, file_no])
            drawn = rng.choice(VOCABULARY, (CHUNKS_PER_FILE, WORDS_PER_CHUNK), p=probabilities)
            texts = [" ".join(words[row]) for row in drawn]
            texts[0] = f"{texts[0]} {rare_token(file_no)}"
            chunks = [
                NewChunk(i, i * 400, i * 400 + len(t), i + 1, i + 1, None, "", t)
                for i, t in enumerate(texts)
            ]
            record = FileRecord(f"f{file_no:07d}.txt", ".txt", 4000, 1, None, "ok", None)
            catalog.writes.store_file(record, chunks)
    finally:
        catalog.close()


def rare_token(file_no: int) -> str:
    return f"tok{file_no}q"


def _write_vectors(paths: IndexPaths, size: int) -> None:
    store = VectorStore(paths.vectors, DIMENSION, graph_path=paths.graph, approximate_from=1)
    catalog = Catalog.open(paths.catalog)
    try:  # vectors are keyed by their chunk's text, in the order the chunks were stored
        _, stored = catalog.chunks.id_keys()
    finally:
        catalog.close()
    _, first = np.unique(stored, return_index=True)
    keys = stored[np.sort(first)]
    step = 100_000
    for start in range(0, len(keys), step):
        batch = keys[start : start + step]
        store.add(batch.tolist(), clustered_vectors(len(batch), seed=start + 1))
    started = time.perf_counter()
    store.refresh_graph()
    print(f"# search: graph of {size} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    store.save()


def query_set(count: int) -> dict[str, npt.NDArray[np.float32]]:
    """``count`` query texts (three mid-frequency words each) with their vectors."""
    words = _words()
    rng = np.random.default_rng(99)
    vectors = clustered_vectors(count, seed=99)
    table: dict[str, npt.NDArray[np.float32]] = {}
    for i in range(count):
        text = " ".join(words[j] for j in rng.integers(100, 5000, 3))
        table[f"{text} {i}"] = vectors[i]
    return table


# -- measuring -------------------------------------------------------------------------


def _engine(
    folder: Path,
    table: dict[str, npt.NDArray[np.float32]],
    model: Embedder | None = None,
    **kw: object,
) -> Engine:
    settings = Settings(
        data_folder=folder / "docs", index_folder=folder / "docs" / "index", watch="off"
    )
    engine = Engine(settings, lambda: TableEmbedder(table, model), **kw)  # type: ignore[arg-type]
    engine.load_model()
    return engine


@dataclass(frozen=True)
class Timed:
    wall: list[float]  # seconds per search
    cpu: list[float]  # CPU seconds of the searching thread per search
    process_cpu: list[float]  # CPU seconds of every thread of the process per search
    found: list[list[int]]  # chunk ids returned, best first


def _timed(engine: Engine, queries: Sequence[str], top_k: int = 10) -> Timed:
    for q in queries[:5]:  # warm: load the vectors, fill the caches
        engine.search(q, top_k=top_k, score_threshold=0.0)
    times: list[float] = []
    found: list[list[int]] = []
    cpu: list[float] = []
    process_cpu: list[float] = []
    for q in queries:
        started, cpu_started = time.perf_counter(), time.thread_time()
        process_started = time.process_time()
        hits = engine.search(q, top_k=top_k, score_threshold=0.0).hits
        times.append(time.perf_counter() - started)
        cpu.append(time.thread_time() - cpu_started)
        process_cpu.append(time.process_time() - process_started)
        found.append([h.chunk.id for h in hits])
    return Timed(times, cpu, process_cpu, found)


def _recall(approximate: Sequence[Sequence[int]], exact: Sequence[Sequence[int]]) -> float:
    shares = [
        len(set(a) & set(e)) / max(1, len(e)) for a, e in zip(approximate, exact, strict=True)
    ]
    return float(np.mean(shares))


def measure(folder: Path, size: int, count: int, model: Embedder | None = None) -> list[Row]:
    label = f"{size // 1000}k chunks" if size < 1_000_000 else f"{size // 1_000_000}M chunks"
    table = query_set(count)
    queries = list(table)
    exact_count = count if size < 1_000_000 else min(count, 50)  # a full scan is slow there
    forced = size < APPROXIMATE_FROM
    note = SYNTHETIC + ("; graph forced (the server is exact at this size)" if forced else "")
    if model is not None:
        note += "; with the real model's query embedding"
    rows: list[Row] = []
    exact = _engine(folder, table, model, approximate_from=NEVER)
    approx = _engine(folder, table, model, approximate_from=1)
    try:
        timed = {
            "exact": _timed(exact, queries[:exact_count]),
            "approximate": _timed(approx, queries),
        }
        for kind, t in timed.items():
            p50, p99 = percentiles_ms(t.wall)
            targets = _targets(size, kind)
            rows.append(Row(SECTION, f"p50, {label}, {kind}", f"{p50:.1f} ms", targets[0], note))
            rows.append(Row(SECTION, f"p99, {label}, {kind}", f"{p99:.1f} ms", targets[1], note))
            cpu50, _ = percentiles_ms(t.cpu)
            cpu_note = (
                "CPU time of the searching thread, which other processes' load inflates least"
                "; the query's embedding and vector channel run in another"
            )
            rows.append(Row(SECTION, f"p50 CPU, {label}, {kind}", f"{cpu50:.1f} ms", "", cpu_note))
            all50, _ = percentiles_ms(t.process_cpu)
            what = f"p50 CPU all threads, {label}, {kind}"
            rows.append(Row(SECTION, what, f"{all50:.1f} ms", "", "both channels"))
        hybrid = _recall(timed["approximate"].found[:exact_count], timed["exact"].found)
        scan, graph, vector = _vector_channel(folder, table, queries[:exact_count])
        target = ">= 0.95" if size >= 1_000_000 else ""
        for kind, ms in (("exact scan", scan), ("graph + exact re-score", graph)):
            measure = f"vector channel p50, {label}, {kind}"
            rows.append(Row(SECTION, measure, f"{ms:.2f} ms", "", note))
        rows.append(
            Row(SECTION, f"recall@10 vs exact, {label}, vector", f"{vector:.3f}", target, note)
        )
        rows.append(Row(SECTION, f"recall@10 vs exact, {label}, hybrid", f"{hybrid:.3f}", "", note))
        rows.extend(_keyword_rows(folder, table, label))
    finally:
        exact.stop()
        approx.stop()
    rows.extend(_size_rows(folder, size, label))
    return rows


def _targets(size: int, kind: str) -> tuple[str, str]:
    if kind != "approximate" and size >= APPROXIMATE_FROM:
        return "", ""
    if size == 100_000:
        return "<= 20 ms", "<= 60 ms"
    if size >= 1_000_000:
        return "<= 30 ms", ""
    return "", ""


def _vector_channel(
    folder: Path, table: dict[str, npt.NDArray[np.float32]], queries: Sequence[str]
) -> tuple[float, float, float]:
    """The vector channel alone, as the engine asks it (``depth`` candidates): p50 of the
    exact scan and of the graph, and the recall@10 of the graph."""
    paths = IndexPaths(folder / "docs" / "index")
    exact = VectorStore.load(paths.vectors, DIMENSION)
    approx = VectorStore.load(paths.vectors, DIMENSION, graph_path=paths.graph, approximate_from=1)
    depth = SearchParams().depth
    times: dict[str, list[float]] = {"exact": [], "graph": []}
    found: dict[str, list[list[int]]] = {"exact": [], "graph": []}
    for q in queries:
        for kind, store in (("exact", exact), ("graph", approx)):
            started = time.perf_counter()
            hits = store.search(table[q], depth)
            times[kind].append(time.perf_counter() - started)
            found[kind].append([cid for cid, _ in hits][:10])
    return (
        percentiles_ms(times["exact"])[0],
        percentiles_ms(times["graph"])[0],
        _recall(found["graph"], found["exact"]),
    )


def _keyword_rows(folder: Path, table: dict[str, npt.NDArray[np.float32]], label: str) -> list[Row]:
    """Keyword channel alone: the four most frequent words, and one file's own token."""
    words = _words()
    common = " ".join(words[:4])
    engine = _engine(folder, table, params=SearchParams(channels=("keyword",)))
    rows: list[Row] = []
    try:
        for name, query in (("common words", common), ("rare token", rare_token(123))):
            p50, _p99 = percentiles_ms(_timed(engine, [query] * 30).wall)
            note = f"{SYNTHETIC}; query {query!r}"
            rows.append(
                Row(SECTION, f"keyword only p50, {label}, {name}", f"{p50:.1f} ms", "", note)
            )
    finally:
        engine.stop()
    return rows


def _size_rows(folder: Path, size: int, label: str) -> list[Row]:
    paths = IndexPaths(folder / "docs" / "index")
    parts = {
        "catalog": sum(
            os.path.getsize(p) for p in paths.folder.glob("catalog.sqlite3*") if p.is_file()
        ),
        "faiss.index": paths.vectors.stat().st_size,
        "hnsw.index": paths.graph.stat().st_size,
    }
    return [
        Row(SECTION, f"on disk per chunk, {label}, {name}", f"{b / size:.0f} B", "", SYNTHETIC)
        for name, b in parts.items()
    ]


def _real_model() -> Embedder | None:
    from micro_rag_mcp.core.errors import ModelUnavailable
    from micro_rag_mcp.model.embedder import load_embedder

    try:
        return load_embedder(threads=len(os.sched_getaffinity(0)))
    except ModelUnavailable as e:
        logger.warning("no model: %s", e)
        return None


def model_row() -> list[Row]:
    """The real model's query embedding, which the synthetic timings leave out."""
    embedder = _real_model()
    if embedder is None:
        return []
    texts = list(query_set(60))
    _time_each(embedder.embed_query, texts[:10])
    p50, p99 = percentiles_ms(_time_each(embedder.embed_query, texts[10:]))
    note = "add to the synthetic search times for the whole search"
    return [
        Row(SECTION, "query embedding p50 / p99, real model", f"{p50:.1f} / {p99:.1f} ms", "", note)
    ]


def _time_each(fn: Callable[[str], object], texts: Sequence[str]) -> list[float]:
    times: list[float] = []
    for t in texts:
        started = time.perf_counter()
        fn(t)
        times.append(time.perf_counter() - started)
    return times
