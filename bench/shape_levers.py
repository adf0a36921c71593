"""The dev collections in every document shape: the channels, the default's worst case,
and what each title lever is worth on each shape.

    .venv/bin/python -m bench.shape_levers --eval <eval> --work <work> \\
        --sets cranfield,cisi,xquad_r_de --limit 300

For each shape of ``bench.shapes`` and each collection, the documents are written in that
shape to ``<work>/<set>-<shape>`` and indexed through the real path (an index already
there is reused; ``bench.retrieval --shape`` builds the same folder). Every query then goes
through ``search``: keyword only, vector only, the default, and the default with each
query-time title lever off (``title_weight`` 0: the keyword channel's title column;
``head_weight`` 0: the file's opening in the vector score). The index-time rules are
measured by indexing the same files read as lines (``.org``: no first-line title, no
Markdown heading) in ``<work>/<set>-<shape>-org``, reusing the shape's passage vectors
where the text is the same: on ``title-txt`` the ``.txt`` first-line title rule, on ``md``
the heading as the passages' title. On ``plain`` and ``title-joined`` the first-line rule
takes no title (the count of files it titles is printed), so there is nothing to index.

A lever holds on a shape when it improves at least two collections it was not chosen on
and costs none more than half a point (``bench.levers.verdict``). ``--limit`` keeps the
first N questions of each set (say so beside the figures).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.levers import CHOSEN_ON, LEVERS, verdict
from bench.metrics import evaluate
from bench.retrieval import (
    CHANNELS,
    Dataset,
    Workspace,
    first_queries,
    index,
    load_dataset,
    prepare,
    search_all,
)
from bench.shapes import SHAPES, document_text
from bench.stored_vectors import StoredVectors
from bench.tune import CachedQueries
from micro_rag_mcp.core.settings import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from micro_rag_mcp.ingest.readers.text import opening_title
from micro_rag_mcp.model.embedder import Embedder, load_embedder
from micro_rag_mcp.search.fusion import SearchParams

logger = logging.getLogger("bench")

QUERY_LEVERS = ("title column weight", "file opening in the vector score")
# The index-time rules: the shape whose files, read as lines, switch the rule off.
INDEX_LEVERS: dict[str, str] = {
    ".txt first line as the title": "title-txt",
    "Markdown heading as the title": "md",
}
INDEX_CHOSEN_ON: dict[str, frozenset[str]] = {
    ".txt first line as the title": frozenset({"scifact"}),  # docs/benchmarks-archive.md
    "Markdown heading as the title": frozenset(),  # a reader's rule, never tuned on a set
}
ROWS = ("keyword only", "vector only", "default")


@dataclass
class Cell:
    """One collection in one shape: nDCG@10 of each variant."""

    ndcg: dict[str, float]
    titled: int  # files the .txt first-line rule gives a title


def ndcg(ws: Workspace, embedder: Embedder, dataset: Dataset, params: SearchParams) -> float:
    cr = search_all(ws, embedder, dataset, "", params, top_k=30, score_threshold=0.0)
    return evaluate(cr.run, dataset.qrels, ("ndcg@10",))["ndcg@10"]


def built(
    dataset: Dataset, work: Path, shape: str, embedder: Embedder, suffix: str | None = None
) -> Workspace:
    ws = prepare(dataset, work, DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP, suffix, shape)
    logger.info("%s: %s", work, index(ws, embedder))
    return ws


def measure(dataset: Dataset, work: Path, shape: str, base: Embedder, embedder: Embedder) -> Cell:
    own = work.parent / f"{work.name}-{shape}"
    ws = built(dataset, own, shape, base)
    params = SearchParams()
    variants: dict[str, SearchParams] = {
        "keyword only": CHANNELS["keyword"](params),
        "vector only": CHANNELS["vector"](params),
        "default": params,
        **{f"{name} off": LEVERS[name](params) for name in QUERY_LEVERS},
    }
    scores = {label: ndcg(ws, embedder, dataset, p) for label, p in variants.items()}
    for lever, where in INDEX_LEVERS.items():
        if where == shape:
            lines = built(dataset, own.parent / f"{own.name}-org", shape, reuse(base, ws), ".org")
            scores[f"{lever} off"] = ndcg(lines, embedder, dataset, params)
    titled = sum(bool(opening_title(document_text(shape, *doc))) for doc in dataset.corpus.values())
    logger.info("%s %s: %s", dataset.name, shape, scores)
    return Cell(scores, titled if SHAPES[shape] == ".txt" else 0)


def reuse(base: Embedder, ws: Workspace) -> Embedder:
    return StoredVectors(base, ws.index)


def channel_table(cells: dict[str, dict[str, Cell]], names: Sequence[str]) -> str:
    lines = [
        "| shape | " + " | ".join(names) + " | worst |",
        "| --- | " + " | ".join("---:" for _ in names) + " | ---: |",
    ]
    for shape, row in cells.items():
        losses = [loss(row[n]) for n in names]
        out = [
            f"{row[n].ndcg['keyword only']:.4f} / {row[n].ndcg['vector only']:.4f} / "
            f"**{row[n].ndcg['default']:.4f}** ({100 * d:+.2f})"
            for n, d in zip(names, losses, strict=True)
        ]
        lines.append(f"| {shape} | {' | '.join(out)} | {100 * min(losses):+.2f} |")
    lines.append("")
    lines.append(
        "keyword / vector / **default** nDCG@10; in brackets the default against its better"
        " channel alone, in points (the worst case)."
    )
    return "\n".join(lines)


def loss(cell: Cell) -> float:
    better = max(cell.ndcg["keyword only"], cell.ndcg["vector only"])
    return cell.ndcg["default"] - better


def lever_table(cells: dict[str, dict[str, Cell]], names: Sequence[str]) -> str:
    lines = [
        "| lever | shape | " + " | ".join(names) + " | verdict on this shape |",
        "| --- | --- | " + " | ".join("---:" for _ in names) + " | --- |",
    ]
    chosen: dict[str, frozenset[str]] = {
        **{lever: CHOSEN_ON[lever] for lever in QUERY_LEVERS},
        **INDEX_CHOSEN_ON,
    }
    for lever, on in chosen.items():
        for shape, row in cells.items():
            if f"{lever} off" not in row[names[0]].ndcg:
                continue
            deltas = {n: row[n].ndcg["default"] - row[n].ndcg[f"{lever} off"] for n in names}
            keep, why = verdict(deltas, on)
            cells_text = " | ".join(f"{100 * deltas[n]:+.2f}" for n in names)
            lines.append(
                f"| {lever} | {shape} | {cells_text} | {'holds' if keep else 'fails'}: {why} |"
            )
    lines.append("")
    lines.append(
        "Points of nDCG@10 the lever is worth (the default minus the default without it)."
        " None of these collections is one a lever was chosen on."
    )
    return "\n".join(lines)


def titled_table(
    cells: dict[str, dict[str, Cell]], names: Sequence[str], docs: Callable[[str], int]
) -> str:
    lines = [
        "| shape | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
    ]
    for shape, row in cells.items():
        lines.append(
            f"| {shape} | " + " | ".join(f"{row[n].titled}/{docs(n)}" for n in names) + " |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.shape_levers", description=__doc__.split("\n")[0]
    )
    p.add_argument("--eval", type=Path, required=True, help="the folder of the dev collections")
    p.add_argument("--work", type=Path, required=True, help="work folders go here")
    p.add_argument("--sets", default="cranfield,cisi,xquad_r_de", help="comma list")
    p.add_argument("--shapes", default=",".join(SHAPES), help="comma list of bench.shapes")
    p.add_argument("--limit", type=int, help="the first N questions of each set")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
    logging.getLogger("micro_rag_mcp").setLevel(logging.WARNING)
    base = load_embedder(threads=len(os.sched_getaffinity(0)))
    embedder = CachedQueries(base)
    names = [n for n in args.sets.split(",") if n]
    datasets = {}
    for n in names:
        dataset = load_dataset(args.eval / n, "qrels.tsv", "queries.jsonl")
        datasets[n] = first_queries(dataset, args.limit) if args.limit else dataset
    cells: dict[str, dict[str, Cell]] = {}
    for shape in [s for s in args.shapes.split(",") if s]:
        cells[shape] = {
            n: measure(datasets[n], args.work / n, shape, base, embedder) for n in names
        }
    asked = ", ".join(f"{n} {len(d.queries)}" for n, d in datasets.items())
    print(f"\nquestions: {asked}\n")
    for title, text in (
        ("The channels and the default", channel_table(cells, names)),
        ("Levers per shape", lever_table(cells, names)),
        (
            "Files the .txt first-line rule titles",
            titled_table(cells, names, lambda n: len(datasets[n].corpus)),
        ),
    ):
        print(f"\n### {title}\n\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
