"""Sweep the search knobs over an index built by ``bench.retrieval``; tune on TRAIN only.

    .venv/bin/python -m bench.tune --dataset ../shared/eval/scifact \\
        --qrels qrels_train.tsv --queries queries_all.jsonl --work <tmp>/bench-scifact-1000

Every variant runs every query through ``Engine.search`` over the same index (no
re-indexing). Query vectors are computed once and cached, so the sweep costs little; the
latency printed here therefore excludes the query embedding (``bench.retrieval``
measures the full latency). ``--base`` sets the params the sweeps start from, e.g.
``--base vector_share=0.8,head_weight=1``.

``--headed`` measures, on another COPY, vectors computed from "document title + chunk"
for every chunk after a document's first (the first already starts with the title); the
stored text and the FTS index stay as they are. That copy re-embeds about half of the
chunks (minutes), once; later runs reuse it.

``--titled`` also measures ``title_weight`` on a COPY of the index whose FTS title
column holds the document title instead of the file-name words (a local experiment for
a proposed catalog change; the real index is not touched).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.retrieval import (
    CHANNELS,
    MEASURES,
    Dataset,
    Workspace,
    index,
    load_dataset,
    params_record,
    prepare,
    search_all,
    summarize,
)
from micro_rag_mcp.core.settings import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from micro_rag_mcp.ingest.files import document_title
from micro_rag_mcp.model.embedder import Embedder, load_embedder
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.terms import STOPWORDS

logger = logging.getLogger("bench")

# A longer list (Lucene's plus common question and function words), for comparison only.
_MORE_STOP = (
    "about above after again all also am any because been before being below between "
    "both can could did do does doing down during each few from further had has have "
    "having he her here hers him his how i its itself just me more most my nor off "
    "once only other our out over own same she should so some than them those through "
    "too under until up very we were what when where which while who whom why would "
    "you your"
)
LONG_STOPWORDS = STOPWORDS | frozenset(_MORE_STOP.split())


class CachedQueries:
    """The real embedder, with query vectors remembered (documents are not embedded here)."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._cache: dict[str, npt.NDArray[np.float32]] = {}

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        if text not in self._cache:
            self._cache[text] = self._inner.embed_query(text)
        return self._cache[text]


@dataclass(frozen=True)
class Variant:
    group: str
    label: str
    params: SearchParams


def variants(
    base: SearchParams, groups: Sequence[str], custom: Sequence[str] = ()
) -> list[Variant]:
    out: list[Variant] = [
        Variant("channels", "keyword only", CHANNELS["keyword"](base)),
        Variant("channels", "vector only", CHANNELS["vector"](base)),
        Variant("channels", "hybrid (base)", base),
    ]
    if "depth" in groups:
        out += [
            Variant("depth", f"depth={d}", replace(base, depth=d))
            for d in (10, 20, 50, 100, 200, 400)
        ]
    if "stopwords" in groups:
        out += [
            Variant(
                "stopwords",
                "stopwords: Lucene 33",
                replace(base, drop_stopwords=True, stopwords=STOPWORDS),
            ),
            Variant(
                "stopwords",
                f"stopwords: long {len(LONG_STOPWORDS)}",
                replace(base, drop_stopwords=True, stopwords=LONG_STOPWORDS),
            ),
            Variant(
                "stopwords",
                "keyword only + Lucene 33",
                CHANNELS["keyword"](replace(base, drop_stopwords=True, stopwords=STOPWORDS)),
            ),
            Variant(
                "stopwords",
                f"keyword only + long {len(LONG_STOPWORDS)}",
                CHANNELS["keyword"](replace(base, stopwords=LONG_STOPWORDS)),
            ),
        ]
    for spec in custom:
        out.append(Variant("custom", spec, parse_base(spec, base)))
    if "title" in groups:
        out += [
            Variant("title", f"title_weight={w:g}", replace(base, title_weight=w))
            for w in (0.0, 0.5, 2.0, 5.0)
        ]
    return out


def run_variant(
    ws: Workspace, embedder: Embedder, dataset: Dataset, v: Variant, top_k: int
) -> dict[str, Any]:
    cr = search_all(ws, embedder, dataset, v.label, v.params, top_k=top_k, score_threshold=0.0)
    return summarize(cr, dataset.qrels)


def titled_copy(ws: Workspace, dataset: Dataset) -> Workspace:
    """A copy of the index whose FTS ``title`` column is the document's real title."""
    target = ws.root.with_name(ws.root.name + "-titled")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copytree(ws.index, target / "index")
    conn = sqlite3.connect(target / "index" / "catalog.sqlite3")
    # the proposed catalog title: file-name words, then the document's first line
    titles = {
        f"{stem}.txt": f"{document_title(Path(stem))} {dataset.corpus[d][0].strip()}"
        for d, stem in ws.names.items()
    }
    with conn:
        for path, title in titles.items():
            conn.execute(
                "UPDATE chunks SET title = ? WHERE file_id = (SELECT id FROM files WHERE path = ?)",
                (title, path),
            )
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    conn.close()
    settings = replace(ws.settings, index_folder=target / "index")
    return replace(ws, root=target, index=target / "index", settings=settings)


def headed_copy(ws: Workspace, dataset: Dataset, embedder: Embedder) -> Workspace:
    """A copy of the index whose later chunks were embedded with the title in front."""
    from micro_rag_mcp.local.engine import Engine
    from micro_rag_mcp.text.vector_text import vector_key

    target = ws.root.with_name(ws.root.name + "-headed")
    settings = replace(ws.settings, index_folder=target / "index")
    headed = replace(ws, root=target, index=target / "index", settings=settings)
    if (target / "done").exists():
        return headed
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copytree(ws.index, target / "index")
    catalog = target / "index" / "catalog.sqlite3"
    conn = sqlite3.connect(catalog)
    rows = conn.execute(
        "SELECT c.id, f.path, c.title, c.text FROM chunks c JOIN files f ON f.id = c.file_id "
        "WHERE c.chunk_index > 0"
    ).fetchall()
    doc_of = ws.doc_of_path
    headed = [
        (f"{dataset.corpus[doc_of[path]][0].strip()}\n\n{text}", title, cid)
        for cid, path, title, text in rows
    ]
    with conn:  # no FTS trigger fires on UPDATE: the keyword index keeps the original text
        # The new key makes the pass below embed the headed text (vectors follow their key).
        conn.executemany(
            "UPDATE chunks SET text = ?, vkey = ? WHERE id = ?",
            [(text, vector_key(title, text), cid) for text, title, cid in headed],
        )
    engine = Engine(settings, lambda: embedder)
    engine.load_model()
    report = engine.reindex()  # the files are unchanged: only the missing vectors are made
    logger.info(
        "headed copy: %d chunks re-embedded in %d ms", report.chunks_embedded, report.elapsed_ms
    )
    engine.stop()
    with conn:
        # The original text back, the headed text's key kept: its vector serves the chunk.
        conn.executemany("UPDATE chunks SET text = ? WHERE id = ?", [(t, c) for c, _, _, t in rows])
    conn.close()
    (target / "done").write_text(str(report.chunks_embedded))
    return headed


def parse_base(text: str | None, start: SearchParams | None = None) -> SearchParams:
    base = start or SearchParams()
    if not text:
        return base
    fields = {f: type(getattr(base, f)) for f in asdict(base)}
    overrides: dict[str, Any] = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        kind = fields[key.strip()]
        value = value.strip()
        if kind is bool:
            overrides[key.strip()] = value.lower() in ("1", "true")
        elif kind is tuple:  # channels=keyword+vector
            overrides[key.strip()] = tuple(value.split("+"))
        else:
            overrides[key.strip()] = kind(value)
    return replace(base, **overrides)


def table(rows: list[tuple[Variant, dict[str, Any]]]) -> str:
    lines = [
        "| group | variant | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | p50 ms* |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for v, r in rows:
        lines.append(
            f"| {v.group} | {v.label} | {r['ndcg@10']:.4f} | {r['recall@10']:.4f} | "
            f"{r['recall@100']:.4f} | {r['mrr@10']:.4f} | {r['latency_p50_ms']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tune", description=__doc__.split("\n")[0])
    p.add_argument("--dataset", type=Path, required=True)
    p.add_argument("--qrels", default="qrels_train.tsv")
    p.add_argument("--queries", default="queries_all.jsonl")
    p.add_argument("--work", type=Path, required=True, help="a work folder bench.retrieval built")
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE)
    p.add_argument("--chunk-overlap", type=int, default=DEFAULT_CHUNK_OVERLAP)
    p.add_argument("--top-k", type=int, default=200)
    p.add_argument("--base", help="comma list of SearchParams overrides, e.g. vector_share=0.8")
    p.add_argument(
        "--groups",
        default="depth,stopwords,title",
        help="depth,stopwords,title",
    )
    p.add_argument(
        "--variants", default="", help="';'-separated override lists, each run on top of --base"
    )
    p.add_argument(
        "--headed", action="store_true", help="also measure title-prefixed chunk vectors"
    )
    p.add_argument("--titled", action="store_true", help="also sweep title_weight on a titled copy")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
    logging.getLogger("micro_rag_mcp").setLevel(logging.WARNING)
    dataset = load_dataset(args.dataset, args.qrels, args.queries)
    ws = prepare(dataset, args.work, args.chunk_size, args.chunk_overlap)
    embedder = CachedQueries(load_embedder())
    indexing = index(ws, embedder)
    if indexing["chunks_embedded"]:
        logger.warning("the index was not complete: %s", indexing)
    base = parse_base(args.base)
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    rows: list[tuple[Variant, dict[str, Any]]] = []
    custom = [c for c in args.variants.split(";") if c.strip()]
    for v in variants(base, groups, custom):
        r = run_variant(ws, embedder, dataset, v, args.top_k)
        logger.info("%s %s: %s", v.group, v.label, {m: r[m] for m in MEASURES})
        rows.append((v, r))
    if args.headed:
        hws = headed_copy(ws, dataset, embedder)
        for label, params in (
            ("vector only", CHANNELS["vector"](base)),
            ("hybrid", base),
        ):
            v = Variant("headed copy", label, params)
            r = run_variant(hws, embedder, dataset, v, args.top_k)
            logger.info("%s %s: %s", v.group, v.label, {m: r[m] for m in MEASURES})
            rows.append((v, r))
    if args.titled:
        tws = titled_copy(ws, dataset)
        for w in (0.0, 1.0, 2.0, 3.0, 5.0, 10.0):
            v = Variant("titled copy", f"title_weight={w:g}", replace(base, title_weight=w))
            r = run_variant(tws, embedder, dataset, v, args.top_k)
            logger.info("%s %s: %s", v.group, v.label, {m: r[m] for m in MEASURES})
            rows.append((v, r))
        for w in (1.0, 3.0):
            v = Variant(
                "titled copy",
                f"keyword only, title_weight={w:g}",
                CHANNELS["keyword"](replace(base, title_weight=w)),
            )
            r = run_variant(tws, embedder, dataset, v, args.top_k)
            rows.append((v, r))
    print(
        f"\n{dataset.name} {args.queries}/{args.qrels}: {len(dataset.queries)} queries; "
        f"work {args.work}; base {base}"
    )
    print("(* p50 excludes the query embedding, which is cached in the sweep)\n")
    print(table(rows))
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {"group": v.group, "label": v.label, "params": params_record(v.params), **r}
                    for v, r in rows
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
