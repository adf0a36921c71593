"""The first index against the encoder alone, as the indexing section measures it.

A whole first index (``Engine.reindex`` with the real model, loaded beforehand) each way
asked for (the shipped pass, and levers alone), alternating with the encoder alone on the
same chunks; per wall second and per CPU second; where a pass's time went; how its
vectors compare with the encoder's own. Runs in a child process of the section.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.perf_common import Row

if TYPE_CHECKING:
    import numpy.typing as npt

    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.local.passes.pipeline import Steps
    from micro_rag_mcp.model.embedder import OnnxEmbedder

SECTION = "indexing"


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
    from micro_rag_mcp.local.passes.pipeline import Steps

    return {
        "before": (
            "before: steps of 16 from windows of 128 ordered by characters",
            Variant(Steps(16, 128, 0), by_tokens=False),
        ),
        "tokens": (
            "steps of 16 from windows of 128 ordered by tokens",
            Variant(Steps(16, 128)),
        ),
        "steps32": (
            "steps of 32 from windows of 128 ordered by tokens",
            Variant(Steps(32, 128)),
        ),
        "window": (
            "steps of 16 from windows of 1024 ordered by tokens",
            Variant(Steps(16, 1024)),
        ),
        "nice": ("as shipped, reading at nice 10", Variant(Steps(reading_nice=10))),
    }


def variants(keys: Sequence[str]) -> dict[str, Variant]:
    """The levers named by ``keys``, then the shipped pass."""
    from micro_rag_mcp.local.passes.pipeline import DEFAULT_STEPS

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


def run_ways(
    settings: Settings,
    index: Path,
    ways: dict[str, Variant],
    rounds: int = 2,
    encoder: str = "minilm",
) -> dict[str, object]:
    """``rounds`` rounds of a whole first index each way and of the encoder alone on its
    chunks (after every second pass), alternating: machine load hits all alike.

    For each way: chunks per second and per CPU second (which other processes' load
    inflates least), where its best pass's time went (the encoder's calls, counting
    tokens, the rest), and the largest difference between a vector of the pass and the
    encoder's own.
    """
    from micro_rag_mcp.local.engine import Engine
    from micro_rag_mcp.model.embedder import load_embedder

    embedder = load_embedder(
        threads=len(os.sched_getaffinity(0)),
        encoder=encoder,  # type: ignore[arg-type]
        quantize=settings.model_precision == "int8",
    )
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
    rates = {
        "cps": len(texts) / seconds,
        "cpu_cps": len(texts) / (_cpu_s() - cpu),
        "load": load,
    }
    return dict(zip(ids, vectors, strict=True)), rates


def _vector_difference(index: Path, alone: dict[int, npt.NDArray[np.float32]]) -> float:
    """The largest difference of a component between the saved vectors and ``alone``."""
    import faiss

    saved = faiss.read_index(str(index / "faiss.index"))
    ids = faiss.vector_to_array(saved.id_map)
    vectors = faiss.downcast_index(saved.index).reconstruct_n(0, saved.ntotal)
    return max(float(np.abs(v - alone[int(c)]).max()) for c, v in zip(ids, vectors, strict=True))


def profile(settings: object, index: Path, sample: int = 256) -> dict[str, object]:
    """Each stage of a first index alone, in seconds over the whole folder: reading (the
    reader process: parse and round trip), chunking, storing (SQLite, FTS5, fsync),
    tokenizing, and the encoder (timed on ``sample`` chunks, scaled to all)."""
    from micro_rag_mcp.core.records import FileRecord
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.ingest.files import extract_chunks, scan_rules
    from micro_rag_mcp.ingest.isolation import IsolatedReader
    from micro_rag_mcp.ingest.scanner import scan
    from micro_rag_mcp.local.catalog import Catalog
    from micro_rag_mcp.model.embedder import load_embedder
    from micro_rag_mcp.text.vector_text import embedding_text

    assert isinstance(settings, Settings)
    files = scan(scan_rules(settings)).files
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    with IsolatedReader(settings.data_folder, settings.read_timeout_s) as reader:
        docs = [(f, reader.read(f.path, max_bytes=settings.max_file_bytes)) for f in files]
    seconds["reading"] = time.perf_counter() - started
    started = time.perf_counter()
    chunked = [(f, extract_chunks(doc, f.path, settings)[1]) for f, doc in docs]
    seconds["chunking"] = time.perf_counter() - started
    shutil.rmtree(index, ignore_errors=True)
    index.mkdir(parents=True)
    catalog = Catalog.open(index / "catalog.sqlite3")
    started = time.perf_counter()
    for f, chunks in chunked:
        catalog.writes.store_file(
            FileRecord(f.rel, ".x", f.size, f.mtime_ns, "-", "ok", None), chunks
        )
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
    """Each vector key of the index and what the pass embedded for it, in chunk order."""
    import sqlite3

    from micro_rag_mcp.text.vector_text import embedding_text

    conn = sqlite3.connect(index / "catalog.sqlite3")
    rows = conn.execute(
        "SELECT vkey, title, text FROM chunks GROUP BY vkey ORDER BY min(id)"
    ).fetchall()
    conn.close()
    return [key for key, _, _ in rows], [embedding_text(title, text) for _, title, text in rows]


def profile_rows(name: str, out: dict[str, Any]) -> list[Row]:
    """Where the time of a first index goes: each stage alone, as a share of their sum."""
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


def pass_rows(name: str, out: dict[str, Any]) -> list[Row]:
    """The rows of a ``measure`` (``run_ways``)."""
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
