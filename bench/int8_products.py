"""Which of an encoder's products to run in int8: each choice against the first, side by side.

For each variant the graph is built in process (the ``graphs`` extra: onnx) with the
named products on ``DynamicQuantizeMatMul`` and the rest in float32 (MiniLM) or 4-bit
(e5-small), the first ``--docs`` documents of a BEIR folder are embedded whole (title,
blank line, text) and searched by cosine alone. Printed per variant: the vector channel's
nDCG@10 over the queries judged on those documents, the cosine of each document's vector
to the first variant's (mean and least), and documents per CPU-second, all in one process
so the speeds compare.

    .venv/bin/python -m bench.int8_products <eval>/cranfield --docs 700
    .venv/bin/python -m bench.int8_products <eval>/xquad_r_de --docs 1276 --encoder e5-small

MiniLM's variants other than fp32 run every product in int8 but the ``ffn-out`` ones named
(each layer's ``output.dense``); "ffn-out fp32 in layers 0-2" is what
``--model-precision int8`` ships (``external_weights.Int8Products``). e5-small's are
named by where its products run: 4-bit blocks on ``MatMulNBits`` with int8 activations
per block (accuracy level 4) or float32 ones (level 0), or int8 but the ``ffn-out`` named.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.metrics import ndcg_at_k, relevant
from bench.retrieval import load_dataset
from micro_rag_mcp.model import loader
from micro_rag_mcp.model.bert_graph import build_model
from micro_rag_mcp.model.e5_graph import E5Weights
from micro_rag_mcp.model.embedder import OnnxEmbedder, open_session, session_options
from micro_rag_mcp.model.external_weights import Int8Products, add_arrays
from micro_rag_mcp.model.files import ENCODERS, find_weights
from micro_rag_mcp.model.graphs import read_encoder
from micro_rag_mcp.model.minilm_int8 import PRODUCTS

LAYERS = 6
EVERY = frozenset(f"encoder.layer.{layer}.{part}" for layer in range(LAYERS) for part in PRODUCTS)


def _ffn_out(layers: range) -> frozenset[str]:
    return frozenset(f"encoder.layer.{layer}.output.dense" for layer in layers)


VARIANTS: dict[str, frozenset[str]] = {
    "fp32": EVERY,
    "int8 all": frozenset(),
    "ffn-out fp32 everywhere": _ffn_out(range(LAYERS)),
    **{f"ffn-out fp32 in layer {n}": _ffn_out(range(n, n + 1)) for n in range(LAYERS)},
    "ffn-out fp32 in layers 0-2": _ffn_out(range(3)),
    "ffn-out fp32 in layers 3-5": _ffn_out(range(3, LAYERS)),
}


E5_LAYERS = 12


def _e5_ffn_out(layers: range) -> frozenset[str]:
    return frozenset(f"l{layer}.fo" for layer in layers)


# name -> (int8, the products kept 4-bit, MatMulNBits' accuracy level)
E5_VARIANTS: dict[str, tuple[bool, frozenset[str], int]] = {
    "4-bit, level 4": (False, frozenset(), 4),
    "4-bit, level 0": (False, frozenset(), 0),
    "int8 all": (True, frozenset(), 0),
    "ffn-out 4-bit everywhere": (True, _e5_ffn_out(range(E5_LAYERS)), 0),
    "ffn-out 4-bit in layers 0-5": (True, _e5_ffn_out(range(6)), 0),
    "ffn-out 4-bit in layers 0-2": (True, _e5_ffn_out(range(3)), 0),
}


class _Chosen(Int8Products):
    """The int8 products, but for ``kept``, which run in float32."""

    def __init__(self, base: Int8Products, kept: frozenset[str]) -> None:
        assert base.table is not None  # MiniLM's word table is int8
        super().__init__(base.tensors, base.table, base.products)
        self.kept_fp32 = kept


def embedder(kept: frozenset[str]) -> OnnxEmbedder:
    """MiniLM with ``kept`` products in float32 and the others in int8."""
    files = read_encoder("minilm", find_weights(ENCODERS["minilm"]), int8=True)
    assert isinstance(files.weights, Int8Products)
    weights = _Chosen(files.weights, kept)
    graph = build_model(weights, files.config).SerializeToString()
    options = session_options(None)
    add_arrays(options, weights.arrays)
    session = open_session(graph, options)
    return OnnxEmbedder(session, loader.tokenizer_for(files), keep=weights.arrays)


def e5_embedder(int8: bool, kept: frozenset[str], level: int) -> OnnxEmbedder:
    """e5-small with its products as ``E5_VARIANTS`` name them."""
    files = read_encoder("e5-small", find_weights(ENCODERS["e5-small"]))
    assert isinstance(files.weights, E5Weights)
    weights = E5Weights(files.weights.packed, int8=int8, kept=kept, accuracy_level=level)
    graph = build_model(weights, files.config).SerializeToString()
    options = session_options(None)
    add_arrays(options, weights.arrays)
    session = open_session(graph, options)
    return OnnxEmbedder(
        session,
        loader.tokenizer_for(files),
        batch_size=4,
        prefixes=loader.E5_PREFIXES,
        keep=weights.arrays,
        words=files.words,
    )


def measure(
    ids: Sequence[str],
    texts: Sequence[str],
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    variants: Mapping[str, Any],
    encoder: str = "minilm",
) -> list[dict[str, Any]]:
    """One row per variant; the first variant is the reference for the cosines."""
    rows: list[dict[str, Any]] = []
    reference = None
    for name, kept in variants.items():
        model = embedder(kept) if encoder == "minilm" else e5_embedder(*kept)
        started = time.process_time()
        vectors = model.embed_documents(texts)
        cpu = time.process_time() - started
        asked = list(queries)
        scores = np.stack([model.embed_query(queries[q]) for q in asked]) @ vectors.T
        ranked = {q: [ids[j] for j in np.argsort(-scores[i])[:10]] for i, q in enumerate(asked)}
        reference = vectors if reference is None else reference
        cosine = (vectors * reference).sum(axis=1)
        ndcg = sum(ndcg_at_k(ranked[q], qrels[q], 10) for q in asked) / len(asked)
        rows.append(
            {
                "variant": name,
                "ndcg": ndcg,
                "mean": float(cosine.mean()),
                "least": float(cosine.min()),
                "rate": len(texts) / cpu,
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.int8_products", description=__doc__.splitlines()[0])
    p.add_argument("dataset", type=Path, help="a BEIR folder (corpus, queries, qrels.tsv)")
    p.add_argument("--docs", type=int, default=700, help="its first documents (default: 700)")
    p.add_argument(
        "--variants",
        default="",
        help="comma-separated names of the variants to run besides the first (default: all)",
    )
    p.add_argument("--encoder", choices=("minilm", "e5-small"), default="minilm")
    args = p.parse_args(argv)
    data = load_dataset(args.dataset, "qrels.tsv", "queries.jsonl")
    ids = list(data.corpus)[: args.docs]
    kept_ids = set(ids)
    texts = [f"{data.corpus[i][0]}\n\n{data.corpus[i][1]}".strip() for i in ids]
    qrels = {
        q: judged
        for q, judged in ((q, relevant(data.qrels[q])) for q in data.queries)
        if any(doc in kept_ids for doc in judged)
    }
    queries = {q: data.queries[q] for q in qrels}
    if not queries:
        p.error(f"no query of {data.name} is judged on its first {len(ids)} documents")
    known: Mapping[str, Any] = VARIANTS if args.encoder == "minilm" else E5_VARIANTS
    first = next(iter(known))
    wanted = [name.strip() for name in args.variants.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        p.error(f"unknown variants {unknown}; known: {list(known)}")
    variants = {
        name: kept for name, kept in known.items() if name == first or not wanted or name in wanted
    }
    print(f"{data.name}: {len(ids)} documents, {len(queries)} judged queries")
    print(f"| variant | nDCG@10 | cosine to {first}, mean / least | documents per CPU-s |")
    print("| --- | ---: | ---: | ---: |")
    for row in measure(ids, texts, queries, qrels, variants, args.encoder):
        print(
            f"| {row['variant']} | {row['ndcg']:.4f} | {row['mean']:.5f} / {row['least']:.5f}"
            f" | {row['rate']:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
