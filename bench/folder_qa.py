"""Document-level retrieval on a folder of real files with questions: ``sec10q_dev``.

The files are copied into ``<work>/docs`` (unchanged copies are left alone), indexed by
the real pipeline into ``<work>/index``, and every question goes through
``Engine.search`` (the MCP ``search`` tool's path) with ``top_k`` 20 and
``score_threshold`` 0. The first five distinct files, in the order their best passage
ranks, are scored against the question's ``relevant_files``:

* Hit@5: any relevant file among them;
* Recall@5: the share of the question's relevant files among them.

    .venv/bin/python -m bench.folder_qa --dataset ../shared/eval/sec10q_dev

``--store milvus://...`` indexes and searches a Milvus store instead of ``<work>/index``
(the server's ``--store`` path), to compare the two stores on the same questions.

The dataset folder holds ``questions.jsonl`` (``id``, ``question``, ``relevant_files``
as paths relative to the dataset folder) and the files those paths name.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bench import work_folder
from bench.metrics import dedupe, percentile
from micro_rag_mcp.core.address import StoreConfig, parse_store_url
from micro_rag_mcp.core.settings import DEFAULT_EXTS, Settings
from micro_rag_mcp.model.embedder import Embedder, load_embedder
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.store import Store, open_store

logger = logging.getLogger("bench")

CHANNELS = ("keyword", "vector", "hybrid")


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    relevant: frozenset[str]


def load_questions(folder: Path) -> list[Question]:
    out = []
    with (folder / "questions.jsonl").open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                out.append(Question(str(d["id"]), d["question"], frozenset(d["relevant_files"])))
    return out


def copy_files(source: Path, docs: Path, rel_paths: Sequence[str]) -> None:
    """Mirror the named files into ``docs``; files already identical are left alone."""
    for rel in rel_paths:
        src, dst = source / rel, docs / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            shutil.copyfile(src, dst)


def open_engine(
    settings: Settings,
    embedder: Embedder,
    store: StoreConfig | None,
    params: SearchParams | None = None,
) -> Store:
    """The embedded index of ``settings`` or the Milvus store ``store``, as the server opens it."""
    folder = settings.data_folder if store is not None else None
    return open_store(settings, lambda: embedder, store, folder=folder, params=params)


def index_folder(
    docs: Path,
    index: Path,
    embedder: Embedder,
    exts: tuple[str, ...] = DEFAULT_EXTS,
    store: StoreConfig | None = None,
) -> Settings:
    """Bring ``index`` (or ``store``) up to date with ``docs`` through the real reindex;
    log the report."""
    settings = Settings(data_folder=docs, index_folder=index, exts=exts, model_wait_s=600.0)
    engine = open_engine(settings, embedder, store)
    engine.load_model()
    started = time.perf_counter()
    report = engine.reindex()
    engine.stop()
    logger.info(
        "indexed %s: %d added, %d updated, %d unchanged, %d failed, %d chunks, %.1f s",
        docs,
        report.files_added,
        report.files_updated,
        report.files_unchanged,
        len(report.files_failed),
        report.chunks_total,
        time.perf_counter() - started,
    )
    for path, reason in report.files_failed:
        logger.warning("not indexed: %s: %s", path, reason)
    return settings


def channel_params(base: SearchParams, channel: str) -> SearchParams:
    if channel == "hybrid":
        return base
    return replace(base, channels=(channel,))


def rank_files(
    settings: Settings,
    embedder: Embedder,
    params: SearchParams,
    queries: Sequence[str],
    top_k: int = 20,
    score_threshold: float = 0.0,
    store: StoreConfig | None = None,
) -> tuple[list[list[str]], list[float]]:
    """For each query, the distinct files of its hits, best first; and the latencies (ms)."""
    engine = open_engine(settings, embedder, store, params)
    engine.load_model()
    engine.search("warm up", top_k=top_k, score_threshold=0.0)
    files: list[list[str]] = []
    latencies: list[float] = []
    for text in queries:
        started = time.perf_counter()
        hits = engine.search(text, top_k=top_k, score_threshold=score_threshold).hits
        latencies.append((time.perf_counter() - started) * 1000)
        files.append(dedupe(h.chunk.path for h in hits))
    engine.stop()
    return files, latencies


def score(
    questions: Sequence[Question], files: Sequence[Sequence[str]], k: int = 5
) -> dict[str, float]:
    hit = recall = 0.0
    for q, ranked in zip(questions, files, strict=True):
        top = set(ranked[:k])
        hit += bool(top & q.relevant)
        recall += len(top & q.relevant) / len(q.relevant)
    n = max(len(questions), 1)
    return {f"hit@{k}": hit / n, f"recall@{k}": recall / n}


def params_from(spec: str | None) -> SearchParams:
    """``SearchParams`` from ``name=value,...`` (numbers, or text for ``fusion``)."""
    base = SearchParams()
    if not spec:
        return base
    changes: dict[str, object] = {}
    for item in spec.split(","):
        name, _, value = item.partition("=")
        current = getattr(base, name.strip())
        changes[name.strip()] = type(current)(value) if not isinstance(current, str) else value
    return replace(base, **changes)  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.folder_qa", description=__doc__.split("\n")[0]
    )
    p.add_argument("--dataset", type=Path, required=True, help="folder with questions.jsonl")
    p.add_argument("--work", type=Path, help="work folder (default: <tmp>/bench-<dataset>)")
    p.add_argument("--params", help="SearchParams overrides, e.g. vector_share=0.8,head_weight=1")
    p.add_argument("--channels", default=",".join(CHANNELS))
    p.add_argument("--dump", type=Path, help="write each question's ranked files here (JSON)")
    p.add_argument(
        "--store", metavar="URL", help="index and search this Milvus store (milvus://...)"
    )
    p.add_argument(
        "--vectors-from",
        type=Path,
        metavar="INDEX",
        help="reuse the passage vectors of this embedded index folder instead of embedding",
    )
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
    questions = load_questions(args.dataset)
    work = args.work or work_folder(args.dataset.resolve().name)
    wanted = sorted({rel for q in questions for rel in q.relevant})
    copy_files(args.dataset, work / "docs", wanted)
    embedder: Embedder = load_embedder(threads=len(os.sched_getaffinity(0)))
    if args.vectors_from:
        from bench.stored_vectors import StoredVectors

        embedder = StoredVectors(embedder, args.vectors_from)
    store = parse_store_url(args.store) if args.store else None
    settings = index_folder(work / "docs", work / "index", embedder, store=store)
    params = params_from(args.params)
    print(f"\n{args.dataset.name}: {len(wanted)} files, {len(questions)} questions")
    print(f"params: {params}\n")
    print("| channel | Hit@5 | Recall@5 | p50 ms |")
    print("| --- | ---: | ---: | ---: |")
    dump = {}
    for channel in [c.strip() for c in args.channels.split(",") if c.strip()]:
        files, lat = rank_files(
            settings,
            embedder,
            channel_params(params, channel),
            [q.text for q in questions],
            store=store,
        )
        m = score(questions, files)
        print(f"| {channel} | {m['hit@5']:.3f} | {m['recall@5']:.3f} | {percentile(lat, 50):.1f} |")
        dump[channel] = {q.id: f[:5] for q, f in zip(questions, files, strict=True)}
    if args.dump:
        args.dump.write_text(json.dumps(dump, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
