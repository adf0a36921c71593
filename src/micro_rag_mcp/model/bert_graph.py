"""Build a BERT sentence encoder (all-MiniLM-L6-v2) as an in-memory ONNX model.

The graph takes ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64,
``[batch, seq]``) and returns ``sentence_embedding`` (float32, ``[batch, hidden]``):
the mean of the last hidden states over the attention mask, L2-normalized. It uses
only standard ONNX ops (opset 17) laid out like a PyTorch export, so onnxruntime's
graph optimizer can fuse LayerNorm, GELU, attention and the bias adds.

The weights either live in the graph (``build_bert_model``, from arrays) or are declared
as external data and handed to the session as arrays (``build_model`` with
``external_weights.ExternalWeights``): the graph is then a few kB, built once by
``scripts/make_graphs.py`` and shipped in the package.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt
    import onnx

OPSET = 17
MS_DOMAIN = "com.microsoft"  # onnxruntime's contrib ops
IR_VERSION = 8
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
WORD_VECTORS = "word_vectors"  # float32 [batch, seq, hidden], where the graph takes them
OUTPUT_NAME = "sentence_embedding"
_MASK_VALUE = -10000.0
_POOL_EPS = 1e-9
_NORM_EPS = 1e-12


@dataclass(frozen=True)
class BertConfig:
    """The hyperparameters the graph needs, read from a Hugging Face ``config.json``."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> BertConfig:
        """Read a BERT ``config.json``; raise ``ValueError`` on anything unsupported."""
        if raw.get("model_type", "bert") != "bert":
            raise ValueError(f"model_type {raw.get('model_type')!r} is not 'bert'")
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act {raw.get('hidden_act')!r} is not 'gelu'")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        config = cls(
            hidden_size=int(raw["hidden_size"]),
            num_layers=int(raw["num_hidden_layers"]),
            num_heads=int(raw["num_attention_heads"]),
            intermediate_size=int(raw["intermediate_size"]),
            layer_norm_eps=float(raw["layer_norm_eps"]),
        )
        if config.hidden_size % config.num_heads:
            raise ValueError("hidden_size is not a multiple of num_attention_heads")
        return config

    @property
    def head_size(self) -> int:
        """Width of one attention head."""
        return self.hidden_size // self.num_heads


class _Weights(Protocol):
    """Where the model's tensors come from, as the graph's initializers."""

    @property
    def transposable(self) -> bool:
        """Whether a weight can be stored transposed (only a copy in memory can)."""
        ...

    def initializer(self, key: str, name: str, transpose: bool) -> onnx.TensorProto:
        """The tensor ``key`` as an initializer called ``name``."""
        ...


@runtime_checkable
class OwnProducts(Protocol):
    """Weights that add their own nodes for the products (4-bit ones)."""

    def linear(self, g: _GraphBuilder, x: str, prefix: str) -> str:
        """``x @ W.T + b`` for the ``nn.Linear`` stored under ``prefix``."""
        ...


@runtime_checkable
class OwnLookup(Protocol):
    """Weights that add their own nodes to read the word table (a quantized one)."""

    def lookup(self, g: _GraphBuilder, ids: str) -> str:
        """The word table's rows for ``ids``, as float32."""
        ...


class _ArrayWeights:
    """Tensors held in memory, copied into the graph."""

    transposable = True

    def __init__(self, weights: Mapping[str, npt.NDArray[Any]]) -> None:
        self._weights = _strip_prefix(weights)

    def initializer(self, key: str, name: str, transpose: bool) -> onnx.TensorProto:
        from onnx import numpy_helper

        array = self._weights[key].astype(np.float32, copy=False)
        array = np.ascontiguousarray(array.T if transpose else array)
        return numpy_helper.from_array(array, name)


class _GraphBuilder:
    """Accumulates nodes and initializers, naming every value uniquely."""

    def __init__(self, weights: _Weights) -> None:
        self.weights = weights
        self._count = 0
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []  # beyond ``INPUT_NAMES``

    def float_input(self, name: str, shape: list[str | int]) -> None:
        """Declare a float32 input of the graph, fed beside ``INPUT_NAMES``."""
        from onnx import TensorProto, helper

        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))

    def _fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, hint: str, value: npt.ArrayLike, dtype: type = np.float32) -> str:
        """Add a constant tensor and return its name."""
        from onnx import numpy_helper

        name = self._fresh(hint)
        array: npt.NDArray[Any] = np.ascontiguousarray(np.asarray(value, dtype=dtype))
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, key: str, *, transpose: bool = False) -> str:
        """Add a model tensor (``transpose`` turns torch ``[out, in]`` into ``[in, out]``)."""
        name = key if getattr(self.weights, "named_by_key", False) else self._fresh(key)
        self.initializers.append(self.weights.initializer(key, name, transpose))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str, output: str = "", **attrs: Any) -> str:
        """Add a single-output node and return the output's name."""
        from onnx import helper

        output = output or self._fresh(hint)
        node = helper.make_node(op_type, inputs, [output], name=f"{output}_node", **attrs)
        self.nodes.append(node)
        return output


def _linear(g: _GraphBuilder, x: str, prefix: str) -> str:
    """``x @ W.T + b`` for a torch ``nn.Linear`` stored under ``prefix``."""
    if isinstance(g.weights, OwnProducts):
        return g.weights.linear(g, x, prefix)
    if g.weights.transposable:
        product = g.op("MatMul", [x, g.weight(f"{prefix}.weight", transpose=True)], "matmul")
    else:
        # onnxruntime's FusedMatMul reads W as stored ([out, in]) and prepacks it the way
        # MatMul prepacks W.T: the same products bit for bit, with no transposed copy.
        weight = g.weight(f"{prefix}.weight")
        product = g.op("FusedMatMul", [x, weight], "matmul", domain=MS_DOMAIN, transB=1)
    return g.op("Add", [product, g.weight(f"{prefix}.bias")], "bias")


def _layer_norm(g: _GraphBuilder, x: str, prefix: str, eps: float) -> str:
    scale, bias = g.weight(f"{prefix}.weight"), g.weight(f"{prefix}.bias")
    return g.op("LayerNormalization", [x, scale, bias], "ln", axis=-1, epsilon=eps)


def _gelu(g: _GraphBuilder, x: str) -> str:
    """Exact GELU ``0.5 * x * (1 + erf(x / sqrt(2)))`` in the pattern ORT fuses."""
    scaled = g.op("Div", [x, g.const("sqrt2", math.sqrt(2.0))], "gelu_div")
    erf = g.op("Erf", [scaled], "gelu_erf")
    shifted = g.op("Add", [erf, g.const("one", 1.0)], "gelu_add")
    product = g.op("Mul", [x, shifted], "gelu_mul")
    return g.op("Mul", [product, g.const("half", 0.5)], "gelu")


def _embeddings(g: _GraphBuilder, cfg: BertConfig) -> str:
    """Word + position + token-type embeddings, then LayerNorm."""
    ids, _, types = INPUT_NAMES
    if isinstance(g.weights, OwnLookup):
        words = g.weights.lookup(g, ids)
    else:
        table = g.weight("embeddings.word_embeddings.weight")
        words = g.op("Gather", [table, ids], "words", axis=0)
    # Slice the position table directly: ORT 1.32 rewrites Range+Gather into a Slice
    # with a scalar start that then fails at run time.
    seq_len = g.op("Shape", [ids], "seq_len", start=1, end=2)
    pos_table = g.weight("embeddings.position_embeddings.weight")
    zero, axis0 = g.const("zero", [0], np.int64), g.const("axis0", [0], np.int64)
    pos = g.op("Slice", [pos_table, zero, seq_len, axis0], "pos_emb")
    type_table = g.weight("embeddings.token_type_embeddings.weight")
    tok_types = g.op("Gather", [type_table, types], "type_emb", axis=0)
    summed = g.op("Add", [g.op("Add", [words, pos], "emb_add"), tok_types], "emb_sum")
    return _layer_norm(g, summed, "embeddings.LayerNorm", cfg.layer_norm_eps)


def _mask_bias(g: _GraphBuilder) -> str:
    """``(1 - mask) * -10000`` shaped ``[batch, 1, 1, seq]`` for the attention scores."""
    mask = g.op("Unsqueeze", [INPUT_NAMES[1], g.const("axis1", [1], np.int64)], "mask3d")
    mask = g.op("Unsqueeze", [mask, g.const("axis2", [2], np.int64)], "mask4d")
    mask_f = g.op("Cast", [mask], "mask_f", to=1)  # 1 = FLOAT
    inverted = g.op("Sub", [g.const("one", 1.0), mask_f], "mask_inv")
    return g.op("Mul", [inverted, g.const("mask_value", _MASK_VALUE)], "mask_bias")


def _split_heads(g: _GraphBuilder, x: str, cfg: BertConfig, perm: list[int]) -> str:
    shape = g.const("heads_shape", [0, 0, cfg.num_heads, cfg.head_size], np.int64)
    return g.op("Transpose", [g.op("Reshape", [x, shape], "heads")], "heads_t", perm=perm)


def _attention(g: _GraphBuilder, x: str, mask_bias: str, prefix: str, cfg: BertConfig) -> str:
    """Multi-head self-attention, output projection, residual and LayerNorm."""
    q = _split_heads(g, _linear(g, x, f"{prefix}.self.query"), cfg, [0, 2, 1, 3])
    k = _split_heads(g, _linear(g, x, f"{prefix}.self.key"), cfg, [0, 2, 3, 1])
    v = _split_heads(g, _linear(g, x, f"{prefix}.self.value"), cfg, [0, 2, 1, 3])
    scores = g.op("MatMul", [q, k], "scores")
    scaled = g.op("Div", [scores, g.const("sqrt_d", math.sqrt(cfg.head_size))], "scaled")
    probs = g.op("Softmax", [g.op("Add", [scaled, mask_bias], "masked")], "probs", axis=-1)
    context = g.op("MatMul", [probs, v], "context")
    merged = g.op("Transpose", [context], "context_t", perm=[0, 2, 1, 3])
    flat_shape = g.const("flat_shape", [0, 0, cfg.hidden_size], np.int64)
    flat = g.op("Reshape", [merged, flat_shape], "context_flat")
    projected = _linear(g, flat, f"{prefix}.output.dense")
    residual = g.op("Add", [projected, x], "attn_residual")
    return _layer_norm(g, residual, f"{prefix}.output.LayerNorm", cfg.layer_norm_eps)


def _feed_forward(g: _GraphBuilder, x: str, prefix: str, cfg: BertConfig) -> str:
    """Intermediate GELU layer, output projection, residual and LayerNorm."""
    hidden = _gelu(g, _linear(g, x, f"{prefix}.intermediate.dense"))
    projected = _linear(g, hidden, f"{prefix}.output.dense")
    residual = g.op("Add", [projected, x], "ffn_residual")
    return _layer_norm(g, residual, f"{prefix}.output.LayerNorm", cfg.layer_norm_eps)


def _mean_pool_normalize(g: _GraphBuilder, hidden: str) -> str:
    """Mean over unmasked tokens, then divide by the (clamped) L2 norm."""
    mask = g.op("Unsqueeze", [INPUT_NAMES[1], g.const("axis2", [2], np.int64)], "mask3d")
    mask_f = g.op("Cast", [mask], "pool_mask", to=1)
    seq_axis = g.const("axis1", [1], np.int64)
    masked = g.op("Mul", [hidden, mask_f], "masked_hidden")
    total = g.op("ReduceSum", [masked, seq_axis], "sum", keepdims=0)
    count = g.op("ReduceSum", [mask_f, seq_axis], "count", keepdims=0)
    count = g.op("Max", [count, g.const("pool_eps", _POOL_EPS)], "count_clamped")
    pooled = g.op("Div", [total, count], "pooled")
    norm = g.op("ReduceL2", [pooled], "norm", axes=[1], keepdims=1)
    norm = g.op("Max", [norm, g.const("norm_eps", _NORM_EPS)], "norm_clamped")
    return g.op("Div", [pooled, norm], "normalized", output=OUTPUT_NAME)


def build_bert_model(weights: Mapping[str, npt.NDArray[Any]], cfg: BertConfig) -> onnx.ModelProto:
    """Build the sentence-embedding model from Hugging Face BERT tensors, held in the graph.

    ``weights`` maps names such as ``encoder.layer.0.attention.self.query.weight``
    (an optional ``bert.`` prefix is accepted) to arrays. Raises ``KeyError`` if one is missing.
    """
    return _build(_ArrayWeights(weights), cfg)


def build_model(weights: _Weights, cfg: BertConfig) -> onnx.ModelProto:
    """The sentence-embedding model over any source of weights."""
    return _build(weights, cfg)


def _build(weights: _Weights, cfg: BertConfig) -> onnx.ModelProto:
    from onnx import TensorProto, helper

    g = _GraphBuilder(weights)
    hidden = _embeddings(g, cfg)
    mask_bias = _mask_bias(g)
    for layer in range(cfg.num_layers):
        prefix = f"encoder.layer.{layer}"
        hidden = _attention(g, hidden, mask_bias, f"{prefix}.attention", cfg)
        hidden = _feed_forward(g, hidden, prefix, cfg)
    _mean_pool_normalize(g, hidden)
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
        for name in INPUT_NAMES
    ] + g.inputs
    output = helper.make_tensor_value_info(
        OUTPUT_NAME, TensorProto.FLOAT, ["batch", cfg.hidden_size]
    )
    graph = helper.make_graph(g.nodes, "bert_sentence_encoder", inputs, [output], g.initializers)
    opsets = [helper.make_opsetid("", OPSET)]
    if not weights.transposable or isinstance(weights, OwnProducts):
        opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = IR_VERSION
    return model


def _strip_prefix(weights: Mapping[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
    """Accept checkpoints saved from ``BertForXxx`` (keys prefixed ``bert.``)."""
    return {key.removeprefix("bert."): value for key, value in weights.items()}
