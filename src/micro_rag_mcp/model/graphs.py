"""An encoder's weights read from its package file, and its graph built over them.

``read_encoder`` reads the weights with numpy alone (what a server does); ``graph_bytes``
builds the graph that declares them, which needs the onnx package: a server runs it in a
child process (``python -m micro_rag_mcp.model.graphs ENCODER FILE``), so that onnx
(about 13 MB that would stay) is never imported where the model runs.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from micro_rag_mcp.model.bert_graph import BertConfig
from micro_rag_mcp.model.e5_graph import E5Weights, e5_config
from micro_rag_mcp.model.external_weights import ExternalWeights
from micro_rag_mcp.model.files import ENCODERS, MINILM_DIR, EncoderName
from micro_rag_mcp.model.minilm_int8 import read_int8_minilm
from micro_rag_mcp.model.packed_e5 import E5Vocabulary, read_packed_e5

GRAPH_FORMAT = 2  # bump when the graph built from the same weights changes


@dataclass(frozen=True)
class EncoderFiles:
    """What an encoder's files hold: its weights, its shape, and (e5) its vocabulary."""

    weights: ExternalWeights
    config: BertConfig
    vocabulary: E5Vocabulary | None


def minilm_config() -> BertConfig:
    """all-MiniLM-L6-v2's configuration, kept beside its tokenizer."""
    raw = json.loads((MINILM_DIR / "config.json").read_text(encoding="utf-8"))
    return BertConfig.from_dict(raw)


def read_encoder(encoder: EncoderName, path: Path) -> EncoderFiles:
    """Read ``encoder``'s weights file; ``ValueError`` or ``OSError`` if it cannot be."""
    if encoder == "e5-small":
        packed = read_packed_e5(path)
        return EncoderFiles(E5Weights(packed), e5_config(packed), packed.vocabulary)
    config = minilm_config()
    int8 = read_int8_minilm(path, config.num_layers)
    return EncoderFiles(ExternalWeights(int8.tensors, int8.table), config, None)


def graph_bytes(encoder: EncoderName, path: Path) -> bytes:
    """The serialized graph over ``encoder``'s weights, which it declares as external."""
    from micro_rag_mcp.model.bert_graph import build_model

    files = read_encoder(encoder, path)
    data: bytes = build_model(files.weights, files.config).SerializeToString()
    return data


if __name__ == "__main__":
    try:
        name = sys.argv[1]
        if name not in ENCODERS:
            raise ValueError(f"no encoder {name!r}")
        sys.stdout.buffer.write(graph_bytes(ENCODERS[name].key, Path(sys.argv[2])))
    except (KeyError, ValueError, OSError, IndexError) as e:
        sys.exit(f"{type(e).__name__}: {e}")
