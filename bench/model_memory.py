"""One encoder alone in this process: its memory and CPU at load and at work, its vectors.

Loads the encoder (one thread), then embeds real passages (the first ``--texts`` of
XQuAD-R de, JaQuAD and SciFact, title and text, as passages: e5's up to 512 tokens, four
a run) and gives the working memory back, as an idle server does. Prints RSS and peak
RSS (``VmHWM``) after each step, and the CPU seconds of the load and of the embedding.
Run it once per source tree, each a fresh process; ``--save`` keeps the vectors and
tokens, ``--compare`` checks them against a run saved before. ``--tokens-only`` times
the tokenizer alone (a cold cache) on the passages of ``--collections``.

    PYTHONPATH=<src> .venv/bin/python -m bench.model_memory --eval <eval> \\
        --encoder e5-small --save <work>/before
    PYTHONPATH=src .venv/bin/python -m bench.model_memory --eval <eval> \\
        --encoder e5-small --compare <work>/before
    PYTHONPATH=src .venv/bin/python -m bench.model_memory --eval <eval> --tokens-only \
        --texts 1000 --collections xquad_r_de,jaquad,scifact,cosqa_dev,lecard_dev \
        --save <work>/tokens   # or --compare
"""

from __future__ import annotations

import argparse
import gc
import gzip
import itertools
import json
import time
from pathlib import Path

import numpy as np

COLLECTIONS = ("xquad_r_de", "jaquad", "scifact")


def memory_mb() -> dict[str, int]:
    """This process's RSS and peak RSS, in MB."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(rest.split()[0]) // 1024
    return out


def passages(eval_dir: Path, names: list[str], per_collection: int) -> list[str]:
    texts = []
    for name in names:
        path = eval_dir / name / "corpus.jsonl"
        gz = path.with_suffix(".jsonl.gz")
        with (
            gzip.open(gz, "rt", encoding="utf-8")
            if gz.exists()
            else path.open(encoding="utf-8") as f
        ):
            for line in itertools.islice(f, per_collection):
                doc = json.loads(line)
                texts.append(f"{doc.get('title', '')}\n{doc['text']}".strip())
    return texts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--eval", type=Path, required=True, help="the eval data folder")
    p.add_argument("--encoder", default="e5-small")
    p.add_argument("--texts", type=int, default=100, help="passages per collection")
    p.add_argument("--collections", default=",".join(COLLECTIONS))
    p.add_argument("--tokens-only", action="store_true", help="time the tokenizer alone")
    p.add_argument("--save", type=Path, help="keep vectors and tokens as <path>.npy/.json")
    p.add_argument("--compare", type=Path, help="check them against a run saved there")
    args = p.parse_args()
    texts = passages(args.eval, args.collections.split(","), args.texts)
    from micro_rag_mcp.core.heap import trim_heap
    from micro_rag_mcp.model.embedder import load_embedder

    gc.collect()
    trim_heap()
    report: dict[str, object] = {"imports": memory_mb()}
    cpu = time.process_time()
    model = load_embedder(threads=1, encoder=args.encoder)  # type: ignore[arg-type]
    report["load_cpu_s"] = round(time.process_time() - cpu, 2)
    gc.collect()
    report["loaded"] = memory_mb()
    cpu = time.process_time()
    tokens = [list(e.ids) for e in model._encode(texts, model._passage)]
    report["tokenize_cpu_s"] = round(time.process_time() - cpu, 2)
    cpu = time.process_time()
    vectors = model.embed_documents(texts[:0] if args.tokens_only else texts)
    report["embed_cpu_s"] = round(time.process_time() - cpu, 2)
    report["embedded"] = memory_mb()
    model.release_memory()
    gc.collect()
    report["released"] = memory_mb()
    report["texts"] = len(texts)
    if args.save:
        np.save(args.save.with_suffix(".npy"), vectors)
        args.save.with_suffix(".json").write_text(json.dumps(tokens), encoding="utf-8")
    if args.compare:
        if not args.tokens_only:
            before = np.load(args.compare.with_suffix(".npy"))
            report["vectors_identical"] = bool(np.array_equal(before, vectors))
            report["min_cosine"] = float((before * vectors).sum(axis=1).min())
        saved = json.loads(args.compare.with_suffix(".json").read_text(encoding="utf-8"))
        report["tokens_identical"] = saved == tokens
    print(json.dumps(report))


if __name__ == "__main__":
    main()
