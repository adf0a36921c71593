"""Every ranking lever switched off in turn, on every dev collection given: the evidence rule.

    .venv/bin/python -m bench.levers \\
        --set cranfield=<eval>/cranfield:<work>/cranfield \\
        --set cisi=<eval>/cisi:<work>/cisi --set xquad_r_de=<eval>/xquad_r_de:<work>/xquad

Each ``--set NAME=DATASET:WORK`` names a dev collection and a work folder that
``bench.retrieval`` built for it (the index is searched again, never rebuilt: a query-time
lever needs no re-embedding). Every query goes through the real ``search`` path with the
default ``SearchParams``, then with one lever switched off through its parameter, then with
each channel alone and with other vector shares. Printed (markdown):

* the lever table: nDCG@10 of the default and the change when the lever is off, per
  collection, and the verdict of the rule: a lever stays only if it improves at least
  two collections it was not chosen on (``CHOSEN_ON``, from docs/benchmarks-archive.md)
  and costs none more than ``TOLERANCE``;
* the same verdict with each collection left out in turn (does one collection decide?);
* the channels beside the default, the default's worst-case loss against the better
  channel, and that worst case for each vector share, chosen leave-one-collection-out;
* ``no_good_match``: the share of answered questions (first result relevant) flagged, and
  of the next collection's questions (another field) flagged over this one's index.

``--shape`` names the shape (``bench.shapes``) the work folders were built in, the same
for every set. Query vectors are computed once and reused by every variant. ``--limit``
keeps the first N queries of a large set (say so beside its figures). ``--no-model``
searches sets indexed with ``bench.retrieval --no-model`` (every vector alike): only the
keyword channel's figures, and a lever's, mean anything there.

``--store milvus`` searches each set on the Milvus store instead (``bench.milvus_sets``:
a milvus-lite server started for the run, its data in ``--milvus-work``, each set indexed
into it from the set's embedded index's own vectors); ``--store both`` searches each set
on both stores in one run and prints each store's tables, then the two side by side.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench import work_folder
from bench.metrics import evaluate, relevant
from bench.retrieval import (
    CHANNELS,
    Dataset,
    NoModel,
    Workspace,
    first_queries,
    load_dataset,
    prepare,
    search_all,
)
from bench.shapes import DEFAULT_SHAPE, SHAPES
from bench.tune import CachedQueries
from micro_rag_mcp.core.settings import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from micro_rag_mcp.model.embedder import Embedder, load_embedder
from micro_rag_mcp.search.fusion import SearchParams

logger = logging.getLogger("bench")

TOLERANCE = 0.005  # a lever may cost no collection more than half a point of nDCG@10
GAIN = 0.0005  # a change smaller than this (rounding) improves nothing

# Each lever: what switches it off, and the collections it was chosen on (the archive).
LEVERS: dict[str, Callable[[SearchParams], SearchParams]] = {
    "title column weight": lambda p: replace(p, title_weight=0.0),
    "file opening in the vector score": lambda p: replace(p, head_weight=0.0),
    "stop words dropped": lambda p: replace(p, drop_stopwords=False),
    "code judged by meaning": lambda p: replace(p, judge_code=False),
    "long CJK queries against whole files": lambda p: replace(p, whole_files=False),
}
CHOSEN_ON: dict[str, frozenset[str]] = {
    "title column weight": frozenset({"scifact"}),
    "file opening in the vector score": frozenset({"sec10q"}),
    "stop words dropped": frozenset({"scifact"}),
    "code judged by meaning": frozenset({"cosqa_py", "cosqa_txt"}),
    "long CJK queries against whole files": frozenset({"lecard"}),
}
SHARES = (0.5, 0.6, 0.8, 0.9)  # vector shares beside the default's
STORES = ("embedded", "milvus")
MILVUS = " (Milvus)"  # a Milvus column's name: the set's, and this


@dataclass
class Collection:
    name: str
    dataset: Dataset
    ws: Workspace
    store: str = "embedded"


@dataclass
class Scores:
    ndcg: dict[str, dict[str, float]]  # variant -> collection -> nDCG@10
    answered_flagged: dict[str, tuple[int, int]]  # collection -> (flagged, answered)
    foreign_flagged: dict[str, tuple[int, int, str]]  # collection -> (flagged, asked, whose)
    # variant -> collection -> query id -> its first ten documents
    top10: dict[str, dict[str, dict[str, list[str]]]] = field(default_factory=dict)


def verdict(
    deltas: Mapping[str, float], chosen: frozenset[str], left_out: str | None = None
) -> tuple[bool, str]:
    """Whether a lever stays, given each collection's nDCG@10 with it minus without it."""
    seen = {c: d for c, d in deltas.items() if c != left_out}
    helped = sorted(
        c for c, d in seen.items() if c.removesuffix(MILVUS) not in chosen and d >= GAIN
    )
    hurt = sorted(c for c, d in seen.items() if d < -TOLERANCE)
    if hurt:
        return False, f"costs {', '.join(hurt)} more than half a point"
    if len(helped) < 2:
        where = ", ".join(helped) or "none"
        return False, f"improves {len(helped)} collection(s) it was not chosen on ({where})"
    return True, f"improves {', '.join(helped)}; costs none more than half a point"


def run(
    sets: Sequence[Collection],
    embedder: Embedder,
    top_k: int,
    foreign_limit: int,
    foreign_from: Dataset | None = None,
) -> Scores:
    base = SearchParams()
    variants: dict[str, SearchParams] = {
        "default": base,
        "keyword only": CHANNELS["keyword"](base),
        "vector only": CHANNELS["vector"](base),
        **{f"{name} off": off(base) for name, off in LEVERS.items()},
        **{f"vector share {s:g}": replace(base, vector_share=s) for s in SHARES},
    }
    scores = Scores({v: {} for v in variants}, {}, {})
    for at, col in enumerate(sets):
        for label, params in variants.items():
            cr = search_all(
                col.ws, embedder, col.dataset, label, params, top_k=top_k, score_threshold=0.0
            )
            ndcg = evaluate(cr.run, col.dataset.qrels, ("ndcg@10",))["ndcg@10"]
            scores.ndcg[label][col.name] = ndcg
            scores.top10.setdefault(label, {})[col.name] = {q: d[:10] for q, d in cr.run.items()}
            logger.info("%s %s: nDCG@10 %.4f", col.name, label, ndcg)
            if label == "default":
                qrels = col.dataset.qrels
                answered = [
                    q
                    for q, docs in cr.run.items()
                    if docs and docs[0] in relevant(qrels.get(q, {}))
                ]
                flagged = sum(q in cr.flagged for q in answered)
                scores.answered_flagged[col.name] = (flagged, len(answered))
        others = [
            s.dataset for s in sets[at + 1 :] + sets[:at] if s.dataset.name != col.dataset.name
        ]
        other = foreign_from or (others[0] if others else None)
        if other is not None:
            asked = dict(list(other.queries.items())[:foreign_limit])
            foreign = replace(col.dataset, queries=asked, qrels={})
            cr = search_all(
                col.ws, embedder, foreign, "foreign", base, top_k=10, score_threshold=0.0
            )
            scores.foreign_flagged[col.name] = (len(cr.flagged), len(asked), other.name)
    return scores


def lever_table(s: Scores, names: Sequence[str]) -> str:
    head = " | ".join(names)
    lines = [
        f"| lever off | {head} | verdict |",
        "| --- | " + " | ".join("---:" for _ in names) + " | --- |",
        "| default (nDCG@10) | "
        + " | ".join(f"{s.ndcg['default'][n]:.4f}" for n in names)
        + " | |",
    ]
    for lever in LEVERS:
        deltas = {n: s.ndcg["default"][n] - s.ndcg[f"{lever} off"][n] for n in names}
        cells = []
        for n in names:
            mark = "*" if n.removesuffix(MILVUS) in CHOSEN_ON[lever] else ""
            cells.append(f"{-100 * deltas[n]:+.2f}{mark}")
        keep, why = verdict(deltas, CHOSEN_ON[lever])
        lines.append(f"| {lever} | {' | '.join(cells)} | {'keep' if keep else 'remove'}: {why} |")
    lines.append("")
    lines.append(
        "Points of nDCG@10 when the lever is off (negative: the lever helps); * the "
        "collection it was chosen on."
    )
    return "\n".join(lines)


def loco_table(s: Scores, names: Sequence[str]) -> str:
    lines = [
        "| lever | " + " | ".join(f"without {n}" for n in names) + " |",
        "| --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for lever in LEVERS:
        deltas = {n: s.ndcg["default"][n] - s.ndcg[f"{lever} off"][n] for n in names}
        cells = [
            "keep" if verdict(deltas, CHOSEN_ON[lever], left_out=n)[0] else "remove" for n in names
        ]
        lines.append(f"| {lever} | {' | '.join(cells)} |")
    return "\n".join(lines)


def worst_loss(s: Scores, variant: str, n: str) -> float:
    better = max(s.ndcg["keyword only"][n], s.ndcg["vector only"][n])
    return s.ndcg[variant][n] - better


def fusion_table(s: Scores, names: Sequence[str]) -> str:
    shares = ["default", *(f"vector share {x:g}" for x in SHARES)]
    lines = [
        "| | " + " | ".join(names) + " | worst |",
        "| --- | " + " | ".join("---:" for _ in names) + " | ---: |",
    ]
    for row in ("keyword only", "vector only"):
        lines.append(f"| {row} | " + " | ".join(f"{s.ndcg[row][n]:.4f}" for n in names) + " | |")
    for v in shares:
        losses = [worst_loss(s, v, n) for n in names]
        label = "default (share 0.7)" if v == "default" else v
        cells = [f"{s.ndcg[v][n]:.4f} ({100 * d:+.2f})" for n, d in zip(names, losses, strict=True)]
        lines.append(f"| {label} | {' | '.join(cells)} | {100 * min(losses):+.2f} |")
    lines.append("")
    lines.append("In brackets: points against the collection's better channel alone.")
    if len(names) > 2:
        lines.append("")
        lines.append("| left out | share chosen on the others (best worst case) | its loss there |")
        lines.append("| --- | --- | ---: |")
        for held in names:
            rest = [n for n in names if n != held]
            chosen = max(shares, key=lambda v: min(worst_loss(s, v, n) for n in rest))
            lines.append(f"| {held} | {chosen} | {100 * worst_loss(s, chosen, held):+.2f} |")
    return "\n".join(lines)


def stores_table(s: Scores, names: Sequence[str]) -> str:
    """Each set on both stores: nDCG@10 (default) and each lever's worth on the embedded
    store / the Milvus store, and the queries whose first ten documents differ."""
    head = " | ".join(f"{n} (embedded / Milvus)" for n in names)
    lines = [f"| | {head} |", "| --- | " + " | ".join("---:" for _ in names) + " |"]

    def row(label: str, cell: Callable[[str], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cell(n) for n in names) + " |")

    def differ(variant: str, n: str) -> int:
        here, there = s.top10[variant][n], s.top10[variant][n + MILVUS]
        return sum(here[q] != there.get(q) for q in here)

    row(
        "default (nDCG@10)",
        lambda n: f"{s.ndcg['default'][n]:.4f} / {s.ndcg['default'][n + MILVUS]:.4f}",
    )
    for lever in LEVERS:
        off = f"{lever} off"

        def worth(n: str, off: str = off) -> str:
            a, b = (s.ndcg["default"][m] - s.ndcg[off][m] for m in (n, n + MILVUS))
            return f"{100 * a:+.2f} / {100 * b:+.2f}"

        row(lever, worth)
    for v in ("keyword only", "vector only"):
        row(v, lambda n, v=v: f"{s.ndcg[v][n]:.4f} / {s.ndcg[v][n + MILVUS]:.4f}")
    row(
        "largest difference (points)",
        lambda n: f"{100 * max(abs(s.ndcg[v][n] - s.ndcg[v][n + MILVUS]) for v in s.ndcg):.2f}",
    )
    for v in ("default", "keyword only", "vector only"):
        row(
            f"queries whose first ten differ, {v}",
            lambda n, v=v: f"{differ(v, n)} of {len(s.top10[v][n])}",
        )
    lines.append("")
    lines.append(
        "Lever rows: points of nDCG@10 the lever is worth (the default minus the default"
        " without it) on each store. The largest difference: over every variant (levers"
        " off, channels, shares)."
    )
    return "\n".join(lines)


def refusal_table(s: Scores, names: Sequence[str]) -> str:
    lines = [
        "| collection | answered questions flagged | another field's questions flagged |",
        "| --- | ---: | ---: |",
    ]
    for n in names:
        f, a = s.answered_flagged.get(n, (0, 0))
        own = f"{f}/{a} ({100 * f / max(a, 1):.1f} %)"
        other = ""
        if n in s.foreign_flagged:
            ff, fa, whose = s.foreign_flagged[n]
            other = f"{ff}/{fa} ({100 * ff / max(fa, 1):.1f} %, {whose}'s)"
        lines.append(f"| {n} | {own} | {other} |")
    return "\n".join(lines)


def parse_set(text: str) -> tuple[str, Path, Path, str | None]:
    """``NAME=DATASET:WORK[:SUFFIX]``."""
    name, _, rest = text.partition("=")
    parts = rest.split(":")
    if not name or len(parts) not in (2, 3):
        raise SystemExit(f"--set {text!r}: expected NAME=DATASET:WORK[:SUFFIX]")
    suffix = parts[2] if len(parts) == 3 else None  # None: the shape's own
    return name, Path(parts[0]), Path(parts[1]), suffix


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.levers", description=__doc__.split("\n")[0])
    p.add_argument("--set", action="append", required=True, help="NAME=DATASET:WORK[:SUFFIX]")
    p.add_argument("--limit", type=int, help="the first N queries of each set")
    p.add_argument(
        "--shape",
        choices=sorted(SHAPES),
        default=DEFAULT_SHAPE,
        help="the shape bench.retrieval --shape wrote every set's documents in",
    )
    p.add_argument("--foreign", type=int, default=100, help="another field's questions asked")
    p.add_argument("--top-k", type=int, default=30, help="passages asked of each search")
    p.add_argument(
        "--foreign-from",
        type=Path,
        help="another field's questions (a dataset folder) for every set",
    )
    p.add_argument(
        "--no-model",
        action="store_true",
        help="search indexes bench.retrieval --no-model built (the keyword channel's figures)",
    )
    p.add_argument(
        "--store",
        choices=(*STORES, "both"),
        default="embedded",
        help="the store searched: the embedded index, the Milvus store (milvus-lite,"
        " started for the run, the sets indexed from their embedded index's vectors), or both",
    )
    p.add_argument(
        "--milvus-work",
        type=Path,
        default=work_folder("levers-milvus"),
        help="the milvus-lite server's data and each set's store pass record",
    )
    p.add_argument(
        "--milvus-url",
        help="search this Milvus (milvus://HOST:PORT/DB) instead of starting milvus-lite",
    )
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
    logging.getLogger("micro_rag_mcp").setLevel(logging.WARNING)
    embedded: list[Collection] = []
    for spec in args.set:
        name, data, work, suffix = parse_set(spec)
        dataset = load_dataset(data, "qrels.tsv", "queries.jsonl")
        if args.limit:
            dataset = first_queries(dataset, args.limit)
        ws = prepare(dataset, work, DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP, suffix, args.shape)
        if not ws.reused:
            raise SystemExit(f"{work}: no index; build it first with bench.retrieval")
        embedded.append(Collection(name, dataset, ws))
    embedder = CachedQueries(NoModel() if args.no_model else load_embedder())
    stores = STORES if args.store == "both" else (args.store,)
    sets = list(embedded) if "embedded" in stores else []
    foreign = (
        load_dataset(args.foreign_from, "qrels.tsv", "queries.jsonl") if args.foreign_from else None
    )
    with ExitStack() as stack:
        if "milvus" in stores:
            from bench.milvus_sets import milvus_at, on_milvus

            address = stack.enter_context(milvus_at(args.milvus_work, args.milvus_url))
            for col in embedded:
                ws = on_milvus(col.ws, address(col.name), embedder, args.milvus_work / col.name)
                sets.append(Collection(col.name + MILVUS, col.dataset, ws, "milvus"))
        scores = run(sets, embedder, args.top_k, args.foreign, foreign)
    for store in stores:
        names = [c.name for c in sets if c.store == store]
        where = f", {store} store" if len(stores) > 1 else ""
        for title, text in (
            ("Levers", lever_table(scores, names)),
            ("The verdict with one collection left out", loco_table(scores, names)),
            ("Fusion by its worst case", fusion_table(scores, names)),
            ('"No good match"', refusal_table(scores, names)),
        ):
            print(f"\n### {title}{where}\n\n{text}")
    if len(stores) > 1:
        names = [c.name for c in embedded]
        print(f"\n### The stores side by side\n\n{stores_table(scores, names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
