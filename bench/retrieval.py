"""Retrieval quality of the real index and search, on a BEIR-style dataset.

Each corpus document becomes ``<work>/docs/<safe id>.txt`` (title, blank line, text; or
another of ``bench.shapes``' shapes with ``--shape``: a Markdown note, the text alone); the
folder is indexed by the real pipeline (``Engine`` with the real embedder) into
``<work>/index``, and every query goes through ``Engine.search`` -- the code path of
the MCP ``search`` tool -- once per channel (keyword only, vector only, hybrid) over
the same index. Chunk hits become document ids (a document's rank is its best chunk's
rank) and are scored with ``bench.metrics``.

    .venv/bin/python -m bench.retrieval --dataset ../shared/eval/scifact

Re-runs reuse the index in ``--work`` when the dataset and chunking match (the reindex
is then an incremental no-op); otherwise the work folder is rebuilt from scratch.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import logging
import os
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import work_folder
from bench.metrics import dedupe, evaluate, percentile, read_qrels, relevant
from bench.shapes import DEFAULT_SHAPE, SHAPES, document_text, suffix_of
from micro_rag_mcp.core.address import StoreConfig, parse_store_url
from micro_rag_mcp.core.results import Hit, Progress
from micro_rag_mcp.core.settings import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, Settings
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.model.embedder import Embedder, load_embedder
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.store import Store, open_store

logger = logging.getLogger("bench")

MEASURES = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
MARKER = "bench.json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


# -- dataset ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    name: str
    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]  # query id -> text, only the judged ones
    qrels: dict[str, dict[str, int]]
    fingerprint: str  # sha256 of corpus.jsonl


def load_dataset(folder: Path, qrels_name: str, queries_name: str) -> Dataset:
    plain = folder / "corpus.jsonl"
    raw = (
        plain.read_bytes()
        if plain.exists()
        else gzip.decompress(plain.with_suffix(".jsonl.gz").read_bytes())
    )
    corpus: dict[str, tuple[str, str]] = {}
    for line in raw.decode("utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            corpus[str(d["_id"])] = (d.get("title") or "", d.get("text") or "")
    qrels = read_qrels(folder / qrels_name)
    all_queries: dict[str, str] = {}
    with (folder / queries_name).open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                q = json.loads(line)
                all_queries[str(q["_id"])] = q["text"]
    missing_q = [q for q in qrels if q not in all_queries]
    missing_d = {d for judged in qrels.values() for d in judged if d not in corpus}
    if missing_q or missing_d:
        raise SystemExit(
            f"{folder}: {len(missing_q)} judged queries lack a text in {queries_name}, "
            f"{len(missing_d)} judged documents are not in the corpus"
        )
    queries = {q: all_queries[q] for q in qrels if relevant(qrels[q])}
    return Dataset(folder.name, corpus, queries, qrels, hashlib.sha256(raw).hexdigest())


def safe_names(ids: Sequence[str]) -> dict[str, str]:
    """A distinct file-name stem for every doc id (unsafe characters replaced)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for doc_id in ids:
        stem = _UNSAFE.sub("_", doc_id) or "_"
        if stem.lower() in used:  # case-insensitive file systems, and replaced characters
            stem = f"{stem}_{hashlib.sha1(doc_id.encode()).hexdigest()[:8]}"
        used.add(stem.lower())
        out[doc_id] = stem
    return out


def first_queries(dataset: Dataset, limit: int) -> Dataset:
    """The first ``limit`` judged queries, and only their judgments: a judged query left
    out of the run would count as 0 in every mean."""
    kept = dict(list(dataset.queries.items())[:limit])
    return replace(dataset, queries=kept, qrels={q: dataset.qrels[q] for q in kept})


class NoModel:
    """An embedder that gives every text the same unit vector: an index without the model."""

    model_id = "no-model"
    dimension = 8

    def embed_documents(self, texts: Sequence[str]) -> Any:
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        out[:, 0] = 1.0
        return out

    def embed_query(self, text: str) -> Any:
        return self.embed_documents([text])[0]


# -- the work folder -------------------------------------------------------------------


@dataclass
class Workspace:
    root: Path
    docs: Path
    index: Path
    settings: Settings
    names: dict[str, str]  # doc id -> file stem
    doc_of_path: dict[str, str]  # "<stem>.txt" -> doc id
    reused: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    store: StoreConfig | None = None  # a Milvus store instead of the index folder

    def engine(self, embedder: Embedder, params: SearchParams | None = None) -> Store:
        """The store the benchmark measures, with the real embedder, as the server runs it."""
        folder = self.docs if self.store is not None else None
        return open_store(self.settings, lambda: embedder, self.store, folder=folder, params=params)


def prepare(
    dataset: Dataset,
    work: Path,
    chunk_size: int,
    chunk_overlap: int,
    suffix: str | None = None,
    shape: str = DEFAULT_SHAPE,
) -> Workspace:
    """Write the documents into ``work/docs`` as ``<id><suffix>`` in ``shape``
    (``bench.shapes``; unchanged files are left alone). ``suffix`` is the shape's own when
    None; ``.py`` reads them as code, ``.org`` as lines (no first-line title, no
    Markdown headings: a shape's text with those rules off)."""
    suffix = suffix or suffix_of(shape)
    identity = {
        "dataset": dataset.name,
        "corpus_sha256": dataset.fingerprint,
        "chunk_size": chunk_size,
        "chunk_overlap": chunk_overlap,
    }
    if suffix != ".txt":
        identity["suffix"] = suffix
    if shape != DEFAULT_SHAPE:
        identity["shape"] = shape
    marker = work / MARKER
    info: dict[str, Any] = {}
    reused = False
    if marker.exists():
        info = json.loads(marker.read_text())
        if {k: info.get(k) for k in identity} == identity:
            reused = (work / "index").exists()
        else:
            logger.warning("work folder %s holds another dataset or chunking; rebuilding", work)
            shutil.rmtree(work / "docs", ignore_errors=True)
            shutil.rmtree(work / "index", ignore_errors=True)
            info = {}
    elif work.exists() and any(work.iterdir()):
        raise SystemExit(f"{work} exists, is not empty and is not a bench work folder")
    docs = work / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    names = safe_names(list(dataset.corpus))
    wanted = {f"{stem}{suffix}" for stem in names.values()}
    for stale in docs.iterdir():
        if stale.name not in wanted:
            stale.unlink()
    for doc_id, (title, text) in dataset.corpus.items():
        path = docs / f"{names[doc_id]}{suffix}"
        content = document_text(shape, title, text).encode("utf-8")
        if not path.exists() or path.read_bytes() != content:
            path.write_bytes(content)
    info.update(identity)
    marker.write_text(json.dumps(info, indent=1))
    settings = Settings(
        data_folder=docs,
        index_folder=work / "index",
        exts=(suffix,),
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        model_wait_s=600.0,
    )
    return Workspace(
        work,
        docs,
        work / "index",
        settings,
        names,
        {f"{stem}{suffix}": d for d, stem in names.items()},
        reused,
        info,
    )


def index(ws: Workspace, embedder: Embedder) -> dict[str, Any]:
    """Bring the index up to date through the real path; return what it took."""
    engine = ws.engine(embedder)
    engine.load_model()
    last = [0.0]

    def progress(p: Progress) -> None:
        now = time.monotonic()
        if now - last[0] > 30 or p.done == p.total:
            last[0] = now
            logger.info("%s %d/%d", p.phase, p.done, p.total)

    started = time.perf_counter()
    report = engine.reindex(progress=progress)
    elapsed = time.perf_counter() - started
    state = engine.state()
    run = {
        "elapsed_s": round(elapsed, 1),
        "files_added": report.files_added,
        "files_updated": report.files_updated,
        "files_unchanged": report.files_unchanged,
        "files_failed": len(report.files_failed),
        "chunks_total": report.chunks_total,
        "chunks_embedded": report.chunks_embedded,
        "chunks_with_vectors": state.chunks_with_vectors,
    }
    if report.chunks_embedded > 0 and report.files_added + report.files_updated > 0:
        ws.info["full_index"] = run  # the run that (re)built the index
        (ws.root / MARKER).write_text(json.dumps(ws.info, indent=1))
    engine.stop()
    if report.files_failed:
        logger.warning("%d files failed: %s", len(report.files_failed), report.files_failed[:5])
    return run


# -- searching -------------------------------------------------------------------------

CHANNELS: dict[str, Callable[[SearchParams], SearchParams]] = {
    "keyword": lambda p: replace(p, channels=("keyword",)),
    "vector": lambda p: replace(p, channels=("vector",)),
    "hybrid": lambda p: p,
}


@dataclass
class ChannelRun:
    name: str
    params: SearchParams
    run: dict[str, list[str]]  # query id -> doc ids, best first
    best_cosine: dict[str, dict[str, float | None]]  # query id -> doc id -> best chunk cosine
    latencies_ms: list[float]
    hits: dict[str, list[tuple[str, float | None]]]  # query id -> (doc id, cosine) per chunk
    flagged: set[str] = field(default_factory=set)  # queries answered "no good match"


def search_all(
    ws: Workspace,
    embedder: Embedder,
    dataset: Dataset,
    name: str,
    params: SearchParams,
    *,
    top_k: int,
    score_threshold: float,
) -> ChannelRun:
    """Every query through ``Engine.search`` with these params, over the shared index."""
    engine = ws.engine(embedder, params)
    engine.load_model()
    engine.search("warm up", top_k=top_k, score_threshold=score_threshold)  # loads the vectors
    out = ChannelRun(name, params, {}, {}, [], {})
    for qid, text in dataset.queries.items():
        started = time.perf_counter()
        outcome = engine.search(text, top_k=top_k, score_threshold=score_threshold)
        out.latencies_ms.append((time.perf_counter() - started) * 1000)
        if outcome.no_good_match:
            out.flagged.add(qid)
        chunks = [(_doc_of(ws, h), h.score) for h in outcome.hits]
        out.hits[qid] = chunks
        out.run[qid] = dedupe(doc for doc, _ in chunks)
        best: dict[str, float | None] = {}
        for doc, score in chunks:
            best.setdefault(doc, score)
        out.best_cosine[qid] = best
    engine.stop()
    return out


def latency_ab(
    ws: Workspace,
    embedder: Embedder,
    dataset: Dataset,
    params: dict[str, SearchParams],
    *,
    top_k: int,
    rounds: int = 3,
) -> dict[str, dict[str, float]]:
    """Search latency of several params side by side: every query through each in turn.

    Alternating per query spreads any change of machine load evenly over the variants.
    """
    engines = {}
    for name, p in params.items():
        engine = Engine(ws.settings, lambda: embedder, params=p)
        engine.load_model()
        engine.search("warm up", top_k=top_k, score_threshold=0.2)
        engines[name] = engine
    times: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(rounds):
        for text in dataset.queries.values():
            for name, engine in engines.items():
                started = time.perf_counter()
                engine.search(text, top_k=top_k, score_threshold=0.2)
                times[name].append((time.perf_counter() - started) * 1000)
    for engine in engines.values():
        engine.stop()
    return {name: {"p50": percentile(t, 50), "p95": percentile(t, 95)} for name, t in times.items()}


def _doc_of(ws: Workspace, hit: Hit) -> str:
    return ws.doc_of_path[hit.chunk.path]


def summarize(cr: ChannelRun, qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    metrics = evaluate(cr.run, qrels, MEASURES)
    lat = cr.latencies_ms
    returned = [len(docs) for docs in cr.run.values()]
    found = [q for q, docs in cr.run.items() if set(docs[:5]) & set(relevant(qrels.get(q, {})))]
    return {
        **{m: round(v, 4) for m, v in metrics.items()},
        "flagged_with_relevant_in_top5": round(
            sum(q in cr.flagged for q in found) / max(len(found), 1), 3
        ),
        "latency_p50_ms": round(percentile(lat, 50), 1),
        "latency_p95_ms": round(percentile(lat, 95), 1),
        "docs_returned_min": min(returned) if returned else 0,
        "docs_returned_median": statistics.median(returned) if returned else 0,
    }


def threshold_effect(
    cr: ChannelRun, qrels: dict[str, dict[str, int]], thresholds: Sequence[float], top: int = 10
) -> dict[str, Any]:
    """Cosine of relevant vs non-relevant hits in the top results, and what a cut would do.

    ``score_threshold`` is applied after ranking, so cutting the full hit list here gives
    exactly the list the server would return with that threshold.
    """
    rel_cos: list[float] = []
    non_cos: list[float] = []
    for qid, chunks in cr.hits.items():
        rel = relevant(qrels.get(qid, {}))
        for doc, score in chunks[:top]:
            if score is not None:
                (rel_cos if doc in rel else non_cos).append(score)
    pcts = (5, 10, 25, 50, 75, 90)
    dist = {
        "top_chunks": top,
        "relevant": {
            "n": len(rel_cos),
            **{f"p{p}": round(percentile(rel_cos, p), 3) for p in pcts},
        },
        "non_relevant": {
            "n": len(non_cos),
            **{f"p{p}": round(percentile(non_cos, p), 3) for p in pcts},
        },
    }
    cuts: dict[str, Any] = {}
    for t in thresholds:
        run = {
            qid: dedupe(doc for doc, s in chunks if s is None or s >= t)
            for qid, chunks in cr.hits.items()
        }
        relevant_top10 = lost = 0
        for qid, docs in cr.run.items():
            rel = relevant(qrels.get(qid, {}))
            for doc in docs[:10]:
                if doc in rel:
                    relevant_top10 += 1
                    score = cr.best_cosine[qid][doc]
                    lost += score is not None and score < t
        cuts[f"{t:g}"] = {
            **{m: round(v, 4) for m, v in evaluate(run, qrels, ("ndcg@10", "recall@10")).items()},
            "relevant_in_top10_cut": lost,
            "relevant_in_top10": relevant_top10,
        }
    dist["thresholds"] = cuts
    return dist


def foreign_cosines(
    ws: Workspace, embedder: Embedder, queries: Sequence[str], top_k: int = 10
) -> dict[str, Any]:
    """Cosine of the hits for queries the corpus cannot answer (another domain's queries)."""
    engine = Engine(ws.settings, lambda: embedder)
    engine.load_model()
    top1: list[float] = []
    top10: list[float] = []
    flagged = 0
    for text in queries:
        outcome = engine.search(text, top_k, -1.0)
        flagged += outcome.no_good_match
        scores = [h.score for h in outcome.hits if h.score is not None]
        if scores:
            top1.append(max(scores))
            top10.extend(scores)
    engine.stop()
    pcts = (10, 50, 90, 99)
    return {
        "queries": len(queries),
        "top1": {f"p{p}": round(percentile(top1, p), 3) for p in pcts},
        f"top{top_k}": {f"p{p}": round(percentile(top10, p), 3) for p in pcts},
        "share_of_top10_at_or_above_0.2": round(sum(s >= 0.2 for s in top10) / len(top10), 3)
        if top10
        else None,
        "flagged_no_good_match": round(flagged / max(len(queries), 1), 3),
    }


def chunk_diversity(
    cr: ChannelRun, qrels: dict[str, dict[str, int]], cuts: Sequence[int] = (5, 10)
) -> dict[str, Any]:
    """What a top_k of chunks shows, against one best chunk per document.

    ``recall_chunks``: share of relevant documents among the first k CHUNKS (what the
    server returns today); ``recall_docs``: among the first k distinct documents (what it
    would return if it kept only the best chunk of each file).
    """
    out: dict[str, Any] = {}
    for k in cuts:
        chunk_run = {qid: dedupe(doc for doc, _ in chunks[:k]) for qid, chunks in cr.hits.items()}
        distinct = [len(docs) for docs in chunk_run.values()]
        out[f"top{k}"] = {
            "mean_distinct_docs": round(statistics.mean(distinct), 2) if distinct else 0,
            "recall_chunks": round(evaluate(chunk_run, qrels, [f"recall@{k}"])[f"recall@{k}"], 4),
            "recall_docs": round(evaluate(cr.run, qrels, [f"recall@{k}"])[f"recall@{k}"], 4),
            "ndcg_chunks": round(evaluate(chunk_run, qrels, [f"ndcg@{k}"])[f"ndcg@{k}"], 4),
            "ndcg_docs": round(evaluate(cr.run, qrels, [f"ndcg@{k}"])[f"ndcg@{k}"], 4),
        }
    return out


# -- output ----------------------------------------------------------------------------


def markdown_table(rows: dict[str, dict[str, Any]]) -> str:
    head = "| channel | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | p50 ms | p95 ms |"
    lines = [head, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['ndcg@10']:.4f} | {r['recall@10']:.4f} | {r['recall@100']:.4f} | "
            f"{r['mrr@10']:.4f} | {r['latency_p50_ms']:.1f} | {r['latency_p95_ms']:.1f} |"
        )
    return "\n".join(lines)


def params_from_args(args: argparse.Namespace) -> SearchParams:
    base = SearchParams()
    overrides = {
        k: getattr(args, k)
        for k in (
            "depth",
            "vector_share",
            "head_weight",
            "title_weight",
        )
        if getattr(args, k) is not None
    }
    return replace(base, **overrides)


def params_record(params: SearchParams) -> dict[str, Any]:
    """The fusion knobs as JSON can hold them (a set of words becomes a sorted list)."""
    return {
        name: sorted(value) if isinstance(value, frozenset) else value
        for name, value in asdict(params).items()
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.retrieval", description=__doc__.split("\n")[0]
    )
    p.add_argument("--dataset", type=Path, required=True, help="folder with corpus.jsonl etc.")
    p.add_argument("--qrels", default="qrels.tsv", help="judgments file in the dataset folder")
    p.add_argument("--queries", default="queries.jsonl", help="queries file in the dataset folder")
    p.add_argument(
        "--suffix",
        help="the documents' file suffix (default: the shape's; .py: read as code, one "
        "function per file; .org: read as lines, no first-line title or headings)",
    )
    p.add_argument(
        "--shape",
        choices=sorted(SHAPES),
        default=DEFAULT_SHAPE,
        help="how each document is written (bench.shapes): title-txt (title, blank line,"
        " text), md (# title heading), plain (no title), title-joined (one paragraph);"
        " use a --work folder per shape",
    )
    p.add_argument(
        "--work",
        type=Path,
        help="work folder (default: <tmp>/bench-<dataset>-<size>)",
    )
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE)
    p.add_argument("--chunk-overlap", type=int, default=DEFAULT_CHUNK_OVERLAP)
    p.add_argument("--top-k", type=int, default=200, help="chunks asked of each search")
    p.add_argument("--score-threshold", type=float, default=0.0)
    p.add_argument(
        "--channels", default="keyword,vector,hybrid", help="comma list of keyword,vector,hybrid"
    )
    p.add_argument("--depth", type=int, help="override SearchParams.depth")
    p.add_argument("--vector-share", type=float, help="override SearchParams.vector_share")
    p.add_argument("--head-weight", type=float, help="override SearchParams.head_weight")
    p.add_argument("--title-weight", type=float, help="override SearchParams.title_weight")
    p.add_argument(
        "--foreign-queries",
        type=Path,
        help="queries.jsonl of ANOTHER domain: report the cosine of hits it gets here",
    )
    p.add_argument("--limit", type=int, help="only the first N queries (smoke test)")
    p.add_argument(
        "--store",
        metavar="URL",
        help="index and search this Milvus store (milvus://HOST:PORT/DB?collection=NAME) "
        "instead of the work folder's index; the same search path as the server's --store",
    )
    p.add_argument(
        "--vectors-from",
        type=Path,
        metavar="INDEX",
        help="reuse the passage vectors of this embedded index folder (same dataset and "
        "chunking) instead of embedding again; queries still go to the model",
    )
    p.add_argument(
        "--latency-ab",
        action="store_true",
        help="time the default against the common fusion for code (judge_code off) side by"
        " side (top_k 5) and stop",
    )
    p.add_argument(
        "--no-model",
        action="store_true",
        help="index and search without the encoder (every passage gets the same vector): "
        "for the keyword channel of a corpus too large to embed; use its own --work folder",
    )
    p.add_argument("--json", type=Path, help="write metrics and settings here")
    p.add_argument("--dump-run", type=Path, help="write the per-query document rankings here")
    p.add_argument("--index-only", action="store_true", help="build the index and stop")
    p.add_argument(
        "--int8",
        action="store_true",
        help="embed with the int8-quantized encoder (use its own --work folder)",
    )
    p.add_argument(
        "--model",
        choices=("minilm", "e5-small"),
        default="minilm",
        help="the encoder (e5-small gets a work folder of its own)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
    dataset = load_dataset(args.dataset, args.qrels, args.queries)
    if args.limit:
        dataset = first_queries(dataset, args.limit)
    suffix = ("-int8" if args.int8 else "") + ("" if args.model == "minilm" else f"-{args.model}")
    if args.shape != DEFAULT_SHAPE:
        suffix += f"-{args.shape}"
    work = args.work or work_folder(f"{dataset.name}-{args.chunk_size}{suffix}")
    ws = prepare(dataset, work, args.chunk_size, args.chunk_overlap, args.suffix, args.shape)
    if args.store:
        ws = replace(ws, store=parse_store_url(args.store))
    embedder: Embedder = (
        NoModel()
        if args.no_model
        else load_embedder(
            threads=len(os.sched_getaffinity(0)), encoder=args.model, quantize=args.int8
        )
    )
    if args.vectors_from:
        from bench.stored_vectors import StoredVectors

        embedder = StoredVectors(embedder, args.vectors_from)
    indexing = index(ws, embedder)
    full = ws.info.get("full_index", indexing)
    logger.info("index: %s", indexing)
    if args.index_only:
        return 0
    params = params_from_args(args)
    if args.latency_ab:
        old = replace(params, judge_code=False)
        variants = {"default": params, "code as prose (before)": old}
        for name, t in latency_ab(ws, embedder, dataset, variants, top_k=5).items():
            print(f"{name}: p50 {t['p50']:.1f} ms, p95 {t['p95']:.1f} ms")
        return 0
    wanted = [c.strip() for c in args.channels.split(",") if c.strip()]
    rows: dict[str, dict[str, Any]] = {}
    runs: dict[str, ChannelRun] = {}
    for name in wanted:
        cr = search_all(
            ws,
            embedder,
            dataset,
            name,
            CHANNELS[name](params),
            top_k=args.top_k,
            score_threshold=args.score_threshold,
        )
        runs[name] = cr
        rows[name] = summarize(cr, dataset.qrels)
        logger.info("%s: %s", name, rows[name])
    cosine = (
        threshold_effect(runs["hybrid"], dataset.qrels, (0.0, 0.1, 0.2, 0.3))
        if "hybrid" in runs
        else None
    )
    foreign = None
    if args.foreign_queries:
        with args.foreign_queries.open(encoding="utf-8") as f:
            texts = [json.loads(line)["text"] for line in f if line.strip()]
        foreign = foreign_cosines(ws, embedder, texts)
    diversity = chunk_diversity(runs["hybrid"], dataset.qrels) if "hybrid" in runs else None
    chunks = indexing["chunks_total"]
    print(
        f"\n{dataset.name}: {len(dataset.corpus)} docs, {chunks} chunks "
        f"(chunk {args.chunk_size}/{args.chunk_overlap}), {len(dataset.queries)} queries "
        f"({args.queries} / {args.qrels}), top_k {args.top_k}, threshold {args.score_threshold:g}"
    )
    print(f"params: {params}")
    print(
        f"indexing: this run {indexing['elapsed_s']} s ({indexing['chunks_embedded']} chunks "
        f"embedded); full build {full['elapsed_s']} s for {full['chunks_total']} chunks "
        f"({full['chunks_total'] / max(full['elapsed_s'], 1e-9):.1f} chunks/s)\n"
    )
    print(markdown_table(rows))
    if cosine is not None:
        dist = {k: cosine[k] for k in ("relevant", "non_relevant")}
        print("\ncosine of hybrid top-10 chunks:", json.dumps(dist))
        for t, r in cosine["thresholds"].items():
            print(f"  threshold {t}: {r}")
    if foreign is not None:
        print(f"\nforeign queries ({args.foreign_queries}): {foreign}")
    if diversity is not None:
        print("\nhybrid, first k chunks vs first k distinct documents:")
        for k, r in diversity.items():
            print(f"  {k}: {r}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "dataset": str(args.dataset),
                    "qrels": args.qrels,
                    "queries": args.queries,
                    "n_queries": len(dataset.queries),
                    "docs": len(dataset.corpus),
                    "chunk_size": args.chunk_size,
                    "chunk_overlap": args.chunk_overlap,
                    "top_k": args.top_k,
                    "score_threshold": args.score_threshold,
                    "params": params_record(params),
                    "indexing_this_run": indexing,
                    "indexing_full": full,
                    "channels": rows,
                    "cosine": cosine,
                    "chunk_diversity": diversity,
                    "foreign_queries": foreign,
                },
                indent=1,
            )
        )
    if args.dump_run:
        args.dump_run.write_text(json.dumps({name: cr.hits for name, cr in runs.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
