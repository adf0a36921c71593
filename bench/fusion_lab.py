"""Fusion experiments without searching again: each query's candidates, recorded once.

``capture`` runs every query of a dev set through ``Engine.search`` over an index the
other benchmarks built, and keeps what the two channels proposed (``search.Candidates``:
the vector and keyword hits, every candidate's cosine, the file heads) with each chunk's
document, the query's words and the share of chunks holding each. ``score`` then ranks
those candidates with any fusion function and scores the ranking as the benchmark that
built the index does (nDCG@10 of documents for the BEIR-style sets, document Hit@5 and
Recall@5 for sec10q_dev, the first file for the identifier set). A fusion sweep over
seven collections takes seconds instead of an hour of searching.

    .venv/bin/python -m bench.fusion_lab capture --kind beir --dataset ../shared/eval/cisi \\
        --work <tmp>/bench-cisi-1000 --out cisi.lab
    .venv/bin/python -m bench.fusion_lab capture --kind folder --dataset \\
        ../shared/eval/sec10q_dev --work <tmp>/bench-sec10q_dev --out sec10q.lab
    .venv/bin/python -m bench.fusion_lab capture --kind identifiers \\
        --work <tmp>/bench-identifiers --out identifiers.lab

The numbers are the search path's own: ``fuse`` is the function the stores call, and a
captured set scored with the default fusion gives the benchmark's own figure (checked
for every set in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import random
import sqlite3
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import micro_rag_mcp.search.gather as gather_mod
from bench.fusions import LabParams, fused
from bench.metrics import dedupe, evaluate
from micro_rag_mcp.core.settings import DEFAULT_EXTS, Settings
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.model.embedder import Embedder, load_embedder
from micro_rag_mcp.model.files import ENCODER_NAMES
from micro_rag_mcp.search.fusion import Candidates, Ranking, SearchParams
from micro_rag_mcp.search.terms import query_terms

logger = logging.getLogger("bench")


@dataclass
class LabSet:
    """One dev set's captured candidates and how its benchmark scores a ranking."""

    name: str
    kind: str  # "beir", "folder" or "identifiers"
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    candidates: dict[str, Candidates]
    shares: dict[str, dict[str, float]]  # query id -> term -> share of chunks holding it
    doc_of: dict[int, str]  # chunk id -> document id (BEIR) or file path
    chunks: int


def capture(settings: Settings, embedder: Embedder, queries: Mapping[str, str]) -> Any:
    """Every query's ``Candidates``, as the engine's search gathered them."""
    seen: list[Candidates] = []
    real_fuse = gather_mod.fuse

    def recording(c: Candidates, params: SearchParams) -> Ranking:
        seen.append(c)
        return real_fuse(c, params)

    engine = Engine(settings, lambda: embedder)
    engine.load_model()
    engine.search("warm up", top_k=5, score_threshold=0.0)
    out: dict[str, Candidates] = {}
    gather_mod.fuse = recording
    try:
        for qid, text in queries.items():
            seen.clear()
            engine.search(text, top_k=5, score_threshold=-1.0)
            out[qid] = seen[-1]
    finally:
        gather_mod.fuse = real_fuse
        engine.stop()
    return out


def chunk_paths(index: Path) -> dict[int, str]:
    with sqlite3.connect(f"file:{index / 'catalog.sqlite3'}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT c.id, f.path FROM chunks c JOIN files f ON f.id = c.file_id")
        return {int(cid): str(path) for cid, path in rows}


def term_shares(index: Path, queries: Mapping[str, str]) -> dict[str, dict[str, float]]:
    from micro_rag_mcp.local.catalog import Catalog

    catalog = Catalog.open_reader(index / "catalog.sqlite3")
    out = {}
    stop = SearchParams().stopwords
    for qid, text in queries.items():
        terms = query_terms(text, stopwords=stop)
        out[qid] = catalog.terms.shares_among(terms)[0] if terms else {}
    catalog.close()
    return out


# -- scoring --------------------------------------------------------------------------

Fusion = Callable[[Candidates], Mapping[int, float]]


def ranked_docs(lab: LabSet, fused: Mapping[int, float], c: Candidates, top_k: int) -> list[str]:
    """The documents of the first ``top_k`` chunks, as ``best_hits`` would return them."""
    keyword = {cid for cid, _ in c.keyword}
    threshold = 0.2 if lab.kind == "identifiers" else 0.0
    chunks = []
    for cid in sorted(fused, key=lambda i: (-fused[i], i)):
        cos = c.cosine.get(cid)
        if cos is not None and cos < threshold and cid not in keyword:
            continue
        if cid in lab.doc_of:
            chunks.append(lab.doc_of[cid])
        if len(chunks) == top_k:
            break
    return dedupe(chunks)


def score(lab: LabSet, fusion: Fusion) -> dict[str, float]:
    """The set's own measure for rankings made by ``fusion``."""
    top_k = {"beir": 200, "folder": 20, "identifiers": 5}[lab.kind]
    run = {qid: ranked_docs(lab, fusion(c), c, top_k) for qid, c in lab.candidates.items()}
    if lab.kind == "beir":
        return evaluate(run, lab.qrels, ("ndcg@10",))
    if lab.kind == "identifiers":
        first = [bool(run[q]) and run[q][0] in lab.qrels[q] for q in run]
        return {"top1": sum(first) / len(first)}
    hit = recall = 0.0
    for qid, docs in run.items():
        rel = set(lab.qrels[qid])
        top = set(docs[:5])
        hit += bool(top & rel)
        recall += len(top & rel) / len(rel)
    n = max(len(run), 1)
    return {"hit@5": hit / n, "recall@5": recall / n}


def channel(c: Candidates, name: str) -> Candidates:
    """The candidates one channel alone would have given."""
    if name == "vector":
        return replace(c, keyword=[], keyword_ran=False)
    return replace(c, vector=[], cosine={}, heads={}, head_cosine={}, vector_ran=False)


def partial(c: Candidates, kept: Callable[[int], bool]) -> Candidates:
    """The candidates as an index with only the ``kept`` chunks' vectors gives them."""
    return replace(
        c,
        vector=[(cid, s) for cid, s in c.vector if kept(cid)],
        cosine={cid: s for cid, s in c.cosine.items() if kept(cid)},
        head_cosine={cid: s for cid, s in c.head_cosine.items() if kept(cid)},
    )


def keep_share(share: float, seed: int = 7) -> Callable[[int], bool]:
    def kept(cid: int) -> bool:
        return random.Random(cid * 7919 + seed).random() < share

    return kept


def load(path: Path) -> LabSet:
    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if module == "__main__":  # captured by ``python -m bench.fusion_lab``
                module = __name__
            if module in ("micro_rag_mcp.fusion", "micro_rag_mcp.search"):
                module = "micro_rag_mcp.search.fusion"  # captured before the house step
            return super().find_class(module, name)

    with path.open("rb") as f:
        lab: LabSet = Unpickler(f).load()
    names = [f.name for f in fields(Candidates)]
    lab.candidates = {  # a capture older than a field of Candidates gets its default
        qid: Candidates(**{n: getattr(c, n) for n in names if hasattr(c, n)})
        for qid, c in lab.candidates.items()
    }
    return lab


# -- choosing the fusion's parameters, leave-one-collection-out ------------------------

# A grid's keys are fields of SearchParams or of bench.fusions.LabParams.
GRIDS: dict[str, dict[str, tuple[Any, ...]]] = {
    "adaptive": {
        "keyword_share": (0.55, 0.65),
        "keyword_floor": (0.0, 0.05),
        "lead_rank": (3, 5),
        "agree_among": (5, 10),
        "head_weight": (0.5, 1.0),
    },
    "convex": {
        "vector_share": (0.6, 0.65, 0.7, 0.75, 0.8, 0.85),
        "head_weight": (0.25, 0.5, 1.0),
    },
}


PRODUCT = LabParams()  # the product's fusion


def measure(
    lab: LabSet, params: SearchParams, only: str | None = None, how: LabParams = PRODUCT
) -> float:
    """One number per set: its measure (the mean of Hit@5 and Recall@5 for a folder);
    ``only``: of that channel alone; ``how``: the fusion (the product's by default)."""
    values = list(
        score(lab, lambda c: fused(channel(c, only) if only else c, params, how)).values()
    )
    return sum(values) / len(values)


def split(point: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A grid point's SearchParams fields and LabParams fields."""
    lab_fields = {f.name for f in fields(LabParams)}
    return (
        {k: v for k, v in point.items() if k not in lab_fields},
        {k: v for k, v in point.items() if k in lab_fields},
    )


def loco(
    labs: Sequence[LabSet],
    base: SearchParams,
    grid: Mapping[str, tuple[Any, ...]],
    how: LabParams = PRODUCT,
) -> list[dict[str, Any]]:
    """For each set: the grid point that does best on all the OTHER sets (the smallest
    loss against each set's better single channel, then the mean), scored on it."""
    import itertools

    keys = list(grid)
    points = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]
    single = {
        lab.name: max(measure(lab, base, only) for only in ("vector", "keyword")) for lab in labs
    }
    table = {
        (i, lab.name): measure(
            lab, replace(base, **split(point)[0]), how=replace(how, **split(point)[1])
        )
        for i, point in enumerate(points)
        for lab in labs
    }
    rows = []
    for held in labs:
        others = [lab for lab in labs if lab.name != held.name]

        def fit(i: int, others: Sequence[LabSet] = others) -> tuple[float, float]:
            gaps = [table[i, lab.name] - single[lab.name] for lab in others]
            return (min(min(gaps), 0.0), sum(gaps) / len(gaps))

        best = max(range(len(points)), key=fit)
        rows.append(
            {
                "held_out": held.name,
                "params": points[best],
                "score": table[best, held.name],
                "better_channel": single[held.name],
            }
        )
    return rows


# -- capture commands -----------------------------------------------------------------


def _beir(args: argparse.Namespace, embedder: Embedder) -> LabSet:
    import json

    from bench.retrieval import MARKER, load_dataset, prepare

    ds = load_dataset(args.dataset, args.qrels, args.queries)
    # The suffix the work folder was built with (``bench.retrieval --suffix``): another
    # one would rebuild the index.
    marker = args.work / MARKER
    built = json.loads(marker.read_text()) if marker.exists() else {}
    ws = prepare(ds, args.work, 1000, 200, built.get("suffix", ".txt"))
    cands = capture(ws.settings, embedder, ds.queries)
    paths = chunk_paths(ws.index)
    doc_of = {cid: ws.doc_of_path[p] for cid, p in paths.items() if p in ws.doc_of_path}
    shares = term_shares(ws.index, ds.queries)
    return LabSet(ds.name, "beir", ds.queries, ds.qrels, cands, shares, doc_of, len(paths))


def _foreign(args: argparse.Namespace, embedder: Embedder) -> LabSet:
    """Another collection's queries (``--queries``, a path) over this work folder's index."""
    import json

    with Path(args.queries).open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    queries = {str(r["_id"]): r.get("text") or r.get("question", "") for r in rows}
    index = args.work / "index"
    docs = args.work / "docs"
    exts = (".txt",) if any(docs.glob("*.txt")) else DEFAULT_EXTS
    settings = Settings(data_folder=docs, index_folder=index, exts=exts)
    cands = capture(settings, embedder, queries)
    paths = chunk_paths(index)
    shares = term_shares(index, queries)
    name = f"{args.work.name}+{Path(args.queries).parent.name}"
    return LabSet(name, "foreign", queries, {}, cands, shares, paths, len(paths))


def _folder(args: argparse.Namespace, embedder: Embedder) -> LabSet:
    from bench.folder_qa import load_questions

    questions = load_questions(args.dataset)
    docs, index = args.work / "docs", args.work / "index"
    settings = Settings(data_folder=docs, index_folder=index, exts=DEFAULT_EXTS)
    queries = {q.id: q.text for q in questions}
    qrels = {q.id: dict.fromkeys(q.relevant, 1) for q in questions}
    cands = capture(settings, embedder, queries)
    paths = chunk_paths(index)
    shares = term_shares(index, queries)
    return LabSet(args.dataset.name, "folder", queries, qrels, cands, shares, paths, len(paths))


def _identifiers(args: argparse.Namespace, embedder: Embedder) -> LabSet:
    from bench.identifiers import make_notes, make_queries

    rnd = random.Random(args.seed)
    notes = make_notes(args.files, rnd)
    return _lookups("identifiers", make_queries(notes, args.tokens, rnd), args.work, embedder)


def _notes(args: argparse.Namespace, embedder: Embedder) -> LabSet:
    """The look-alike incident notes of ``bench.at_work`` (its complete index, the
    ``snapshot`` folder of its work folder): each identifier alone and in a sentence."""
    from bench.incident_notes import identifier_queries, make_notes

    pairs = identifier_queries(make_notes(args.files))
    return _lookups("notes", pairs, args.work, embedder)


def _code_names(args: argparse.Namespace, embedder: Embedder) -> LabSet:
    """Functions looked up by name in ``bench.retrieval --suffix .py``'s index of code:
    ``--tokens`` names that stand in one file only, each alone and in a question."""
    import re

    docs = args.work / "docs"
    defined: dict[str, str] = {}
    files_of: dict[str, set[str]] = {}
    for path in sorted(docs.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for word in set(re.findall(r"\w+", text)):
            files_of.setdefault(word, set()).add(path.name)
        for name in re.findall(r"^\s*def (\w+)\(", text, re.MULTILINE):
            defined.setdefault(name, path.name)
    unique = sorted(n for n, f in defined.items() if files_of[n] == {f} and len(n) > 3)
    names = random.Random(args.seed).sample(unique, args.tokens)
    pairs = [(q, defined[n]) for n in names for q in (n, f"What does {n} do?")]
    return _lookups("code_names", pairs, args.work, embedder, (".py",))


def _lookups(
    name: str,
    pairs: Sequence[tuple[str, str]],
    work: Path,
    embedder: Embedder,
    exts: tuple[str, ...] = (".txt",),
) -> LabSet:
    """(query, the one file that holds its token) pairs over ``work``'s index of ``exts``."""
    queries = {str(i): q for i, (q, _) in enumerate(pairs)}
    qrels = {str(i): {want: 1} for i, (_, want) in enumerate(pairs)}
    docs, index = work / "docs", work / "index"
    settings = Settings(data_folder=docs, index_folder=index, exts=exts)
    cands = capture(settings, embedder, queries)
    paths = chunk_paths(index)
    shares = term_shares(index, queries)
    return LabSet(name, "identifiers", queries, qrels, cands, shares, paths, len(paths))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fusion_lab", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture", help="record every query's candidates")
    cap.add_argument(
        "--kind",
        choices=("beir", "folder", "identifiers", "notes", "code-names", "foreign"),
        required=True,
    )
    cap.add_argument("--dataset", type=Path)
    cap.add_argument("--qrels", default="qrels.tsv")
    cap.add_argument("--queries", default="queries.jsonl")
    cap.add_argument("--work", type=Path, required=True, help="the benchmark's work folder")
    cap.add_argument(
        "--files", type=int, default=300, help="identifiers, notes: as bench.identifiers, at_work"
    )
    cap.add_argument("--tokens", type=int, default=50, help="identifiers, code-names: how many")
    cap.add_argument("--seed", type=int, default=5)
    cap.add_argument("--out", type=Path, required=True)
    cap.add_argument("--model", choices=ENCODER_NAMES, default="minilm", help="the encoder")
    choose = sub.add_parser("loco", help="choose the parameters leave-one-collection-out")
    choose.add_argument("labs", type=Path, nargs="+", help="captured sets")
    choose.add_argument("--fusion", choices=sorted(GRIDS), default="convex")
    args = p.parse_args(argv)
    if args.command == "loco":
        labs = [load(path) for path in args.labs]
        for row in loco(labs, SearchParams(), GRIDS[args.fusion], LabParams(args.fusion)):
            print(
                f"| {row['held_out']} | {row['params']} | {row['score']:.4f} | "
                f"{row['better_channel']:.4f} |"
            )
        return 0
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
    embedder = load_embedder(threads=len(os.sched_getaffinity(0)), encoder=args.model)
    make = {
        "beir": _beir,
        "folder": _folder,
        "identifiers": _identifiers,
        "notes": _notes,
        "code-names": _code_names,
        "foreign": _foreign,
    }[args.kind]
    lab = make(args, embedder)
    with args.out.open("wb") as f:
        pickle.dump(lab, f)
    logger.info("%s: %d queries captured to %s", lab.name, len(lab.candidates), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
