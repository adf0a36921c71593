"""An encoder's weights read from its package file, and its graph built over them.

``read_encoder`` reads the weights with numpy alone (what a server does); ``graph_bytes``
builds the graph that declares them, which needs the onnx package (the ``graphs`` extra):
``scripts/make_graphs.py`` runs it to make the graphs shipped in the package, so a server
never builds one and the install carries no onnx.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from micro_rag_mcp.model.bert_graph import BertConfig
from micro_rag_mcp.model.e5_graph import INT8_KEPT, E5Weights, e5_config
from micro_rag_mcp.model.external_weights import ExternalWeights, Int8Products
from micro_rag_mcp.model.files import INT8, MINILM_DIR, EncoderName
from micro_rag_mcp.model.minilm_int8 import read_int8_minilm
from micro_rag_mcp.model.packed_e5 import E5Vocabulary, WordRows, read_packed_e5


@dataclass(frozen=True)
class EncoderFiles:
    """What an encoder's files hold: its weights, its shape, and (e5) its vocabulary and
    its word table, which the graph takes as an input (``e5_graph.WORD_VECTORS``)."""

    weights: ExternalWeights
    config: BertConfig
    vocabulary: E5Vocabulary | None
    words: WordRows | None = None


def minilm_config() -> BertConfig:
    """all-MiniLM-L6-v2's configuration, kept beside its tokenizer."""
    raw = json.loads((MINILM_DIR / "config.json").read_text(encoding="utf-8"))
    return BertConfig.from_dict(raw)


def read_encoder(encoder: EncoderName, path: Path, *, int8: bool = False) -> EncoderFiles:
    """Read ``encoder``'s weights file; ``ValueError`` or ``OSError`` if it cannot be.

    ``int8``: the products on int8 weights, for ``DynamicQuantizeMatMul`` (MiniLM's as
    shipped, e5's requantized from its 4-bit blocks), but for a few kept as they were.
    """
    if encoder == "e5-small":
        packed = read_packed_e5(path)
        e5 = E5Weights(packed, int8=int8, kept=INT8_KEPT)
        return EncoderFiles(e5, e5_config(packed), packed.vocabulary, packed.words)
    config = minilm_config()
    minilm = read_int8_minilm(path, config.num_layers)
    if int8:
        products = Int8Products(minilm.tensors, minilm.table, minilm.products)
        return EncoderFiles(products, config, None)
    return EncoderFiles(ExternalWeights(minilm.tensors, minilm.table), config, None)


def graph_name(encoder: EncoderName, int8: bool) -> str:
    """The shipped graph's name (a key of ``files.GRAPHS``)."""
    return encoder + INT8 if int8 else encoder


def encoder_of(name: str) -> EncoderName:
    """The encoder whose weights the shipped graph ``name`` declares."""
    return "e5-small" if name.startswith("e5-small") else "minilm"


def graph_bytes(name: str, path: Path) -> bytes:
    """The serialized graph ``name`` (``graph_name``) over its encoder's weights at
    ``path``, which it declares as external."""
    from micro_rag_mcp.model.bert_graph import build_model

    files = read_encoder(encoder_of(name), path, int8=name.endswith(INT8))
    data: bytes = build_model(files.weights, files.config).SerializeToString()
    return data
