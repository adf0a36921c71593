"""Calibrate ``no_good_match`` on every dev collection given, in every language.

    .venv/bin/python -m bench.refusal --set cranfield=<eval>/cranfield:<work>/cranfield \\
        --set xquad_r_de=<eval>/xquad_r_de:<work>/xquad --set jaquad=<eval>/jaquad:<work>/ja

Each set's own questions, and the next set's (another field's, in another language for
some), go through the real search over the set's index (``bench.retrieval`` built it);
what ``no_good_match`` weighs is recorded for each (the best cosine, the best keyword
score over the summed idf of the query's words, the share of the query the encoder
reads). Printed: for the product's rule and for each rule of a small grid, the share of
answered questions (the first result relevant) flagged and of foreign ones flagged, per
set; the targets are at most ``ANSWERED`` and at least ``FOREIGN`` on every set.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.fusion_lab import capture, chunk_paths
from bench.levers import parse_set
from bench.metrics import relevant
from bench.retrieval import load_dataset, prepare
from bench.tune import CachedQueries
from micro_rag_mcp.core.settings import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from micro_rag_mcp.model.embedder import Embedder, load_embedder
from micro_rag_mcp.model.files import ENCODER_NAMES, reads_every_language
from micro_rag_mcp.search.fusion import Candidates, SearchParams, fuse

logger = logging.getLogger("bench")

ANSWERED = 0.05  # at most this share of answered questions flagged
FOREIGN = 0.90  # at least this share of another field's questions flagged


@dataclass(frozen=True)
class Signal:
    cosine: float  # the best cosine (-1 without the vector channel)
    coverage: float  # the best keyword score over the query's summed idf (0 without words)
    read: float  # the share of the query the encoder reads
    flagged: bool  # what the product says


def signal(c: Candidates, params: SearchParams) -> Signal:
    best = c.keyword[0][1] if c.keyword else 0.0
    coverage = best / c.keyword_idf if c.keyword_idf > 0 else 0.0
    cosine = max(c.cosine.values(), default=-1.0)
    return Signal(cosine, coverage, c.read_share, fuse(c, params).no_good_match)


@dataclass(frozen=True)
class Rule:
    """Flag when the best cosine is under ``cosine`` and the coverage under ``coverage``;
    a query the encoder mostly cannot read by its coverage alone, under ``cjk``."""

    cosine: float
    coverage: float
    cjk: float

    def flags(self, s: Signal) -> bool:
        if s.read < 0.5:
            return s.coverage < self.cjk
        return s.cosine < self.cosine and s.coverage < self.coverage


@dataclass
class SetSignals:
    name: str
    answered: list[Signal]
    foreign: list[Signal]
    whose: str


def measure(
    spec: tuple[str, Path, Path, str],
    embedder: Embedder,
    foreign: dict[str, str],
    whose: str,
    limit: int,
    params: SearchParams,
) -> SetSignals:
    name, data, work, suffix = spec
    dataset = load_dataset(data, "qrels.tsv", "queries.jsonl")
    queries = dict(list(dataset.queries.items())[:limit])
    ws = prepare(dataset, work, DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP, suffix)
    paths = chunk_paths(ws.index)
    own = capture(ws.settings, embedder, queries)
    answered: list[Signal] = []
    for qid, c in own.items():
        ranked = fuse(c, params).ranked
        first = ws.doc_of_path.get(paths.get(ranked[0], "")) if ranked else None
        if first is not None and first in relevant(dataset.qrels[qid]):
            answered.append(signal(c, params))
    other = capture(ws.settings, embedder, foreign)
    logger.info("%s: %d answered of %d, %d foreign", name, len(answered), len(own), len(other))
    return SetSignals(name, answered, [signal(c, params) for c in other.values()], whose)


Flags = Callable[[Signal], bool] | None  # None: what the product said


def shares(s: SetSignals, flags: Flags) -> tuple[float, float]:
    def f(x: Signal) -> bool:
        return x.flagged if flags is None else flags(x)

    a = sum(f(x) for x in s.answered) / max(len(s.answered), 1)
    o = sum(f(x) for x in s.foreign) / max(len(s.foreign), 1)
    return a, o


def margin(sets: Sequence[SetSignals], rule: Rule) -> float:
    """The smallest slack of either target over the sets (negative: one is missed)."""
    worst = 1.0
    for s in sets:
        a, o = shares(s, rule.flags)
        worst = min(worst, ANSWERED - a, o - FOREIGN)
    return worst


def table(sets: Sequence[SetSignals], label: str, flags: Flags) -> list[str]:
    cells = []
    for s in sets:
        a, o = shares(s, flags)
        cells.append(f"{100 * a:.1f} % / {100 * o:.1f} %")
    return [f"| {label} | {' | '.join(cells)} |"]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.refusal", description=__doc__.split("\n")[0])
    p.add_argument("--set", action="append", required=True, help="NAME=DATASET:WORK[:SUFFIX]")
    p.add_argument("--limit", type=int, default=300, help="the first N questions of each set")
    p.add_argument("--foreign", type=int, default=100, help="another field's questions asked")
    p.add_argument("--model", choices=ENCODER_NAMES, default="minilm", help="the encoder")
    p.add_argument(
        "--cosines",
        default="0.30,0.35,0.40,0.45,0.50",
        help="the weak-cosine bounds tried (e5's cosines lie higher: 0.78,0.80,0.81,0.82)",
    )
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
    logging.getLogger("micro_rag_mcp").setLevel(logging.WARNING)
    specs = [parse_set(s) for s in args.set]
    questions = {
        name: dict(list(load_dataset(data, "qrels.tsv", "queries.jsonl").queries.items()))
        for name, data, _, _ in specs
    }
    embedder = CachedQueries(load_embedder(encoder=args.model))
    # the product's fusion and bound for this encoder, as the engine sets them
    params = SearchParams(multilingual_encoder=reads_every_language(embedder.model_id))
    sets: list[SetSignals] = []
    for at, spec in enumerate(specs):
        whose = specs[(at + 1) % len(specs)][0]
        foreign = dict(list(questions[whose].items())[: args.foreign])
        sets.append(measure(spec, embedder, foreign, whose, args.limit, params))
    grid = [
        Rule(c, k, j)
        for c, k, j in itertools.product(
            [float(x) for x in args.cosines.split(",")],
            (0.4, 0.5, 0.6, 0.7, 0.8),
            (0.2, 0.3, 0.4, 0.5, 0.6),
        )
    ]
    best = max(grid, key=lambda r: margin(sets, r))
    head = " | ".join(f"{s.name} (foreign: {s.whose}'s)" for s in sets)
    lines = [
        f"| rule | {head} |",
        "| --- | " + " | ".join("---:" for _ in sets) + " |",
        *table(sets, "the product's", None),
        *table(sets, f"cosine {best.cosine}, coverage {best.coverage}, CJK {best.cjk}", best.flags),
    ]
    print("\n".join(lines))
    print(f"\nanswered questions flagged / foreign flagged; best margin {margin(sets, best):+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
