"""Write a smaller BEIR folder from a dev collection: its first questions, the documents
judged for them, and others drawn at random.

    .venv/bin/python -m bench.dev_subset <eval>/jaquad <work>/jaquad-subset \\
        --queries 200 --others 1300
    .venv/bin/python -m bench.dev_subset <eval>/lecard_dev <work>/lecard-subset \\
        --queries 20 --others 1400

The questions are the first ``--queries`` of ``queries.jsonl`` with a relevant document;
the corpus holds every document judged for them (whatever the grade) and ``--others``
more, drawn with ``random.Random(--seed)`` from the rest in id order. Written:
``corpus.jsonl``, ``queries.jsonl``, ``qrels.tsv``, into a folder that must not exist.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.retrieval import load_dataset


def write_subset(source: Path, out: Path, queries: int, others: int, seed: int) -> tuple[int, int]:
    """Write the subset; return (questions, documents)."""
    dataset = load_dataset(source, "qrels.tsv", "queries.jsonl")
    with (source / "queries.jsonl").open(encoding="utf-8") as f:
        order = [str(json.loads(line)["_id"]) for line in f if line.strip()]
    chosen = [q for q in order if q in dataset.queries][:queries]
    judged = {doc for q in chosen for doc in dataset.qrels[q]}
    rest = sorted(set(dataset.corpus) - judged)
    drawn = random.Random(seed).sample(rest, min(others, len(rest)))
    docs = sorted(judged) + sorted(drawn)
    out.mkdir(parents=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for doc in docs:
            title, text = dataset.corpus[doc]
            f.write(json.dumps({"_id": doc, "title": title, "text": text}, ensure_ascii=False))
            f.write("\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in chosen:
            f.write(json.dumps({"_id": q, "text": dataset.queries[q]}, ensure_ascii=False) + "\n")
    with (out / "qrels.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q in chosen:
            for doc, grade in dataset.qrels[q].items():
                f.write(f"{q}\t{doc}\t{grade}\n")
    return len(chosen), len(docs)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.dev_subset", description=__doc__.split("\n")[0]
    )
    p.add_argument("source", type=Path, help="a BEIR folder (corpus, queries.jsonl, qrels.tsv)")
    p.add_argument("out", type=Path, help="the folder to write (must not exist)")
    p.add_argument("--queries", type=int, required=True, help="the first N judged questions")
    p.add_argument("--others", type=int, required=True, help="unjudged documents drawn")
    p.add_argument("--seed", type=int, default=7, help="the draw's seed")
    args = p.parse_args(argv)
    if args.out.exists():
        raise SystemExit(f"{args.out} exists; name a new folder")
    questions, documents = write_subset(args.source, args.out, args.queries, args.others, args.seed)
    print(f"{args.out}: {questions} questions, {documents} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
