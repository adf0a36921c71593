"""Weights held as numpy arrays and handed to onnxruntime beside the graph, not in it.

The graph declares each weight as external data; the session is then given the arrays
themselves (``SessionOptions.add_external_initializers``), which onnxruntime uses where
they lie: the graph stays a few kB, and no weight is copied into it and again out of it.
``arrays`` must outlive the session (the embedder keeps them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt
    import onnx
    import onnxruntime

    from micro_rag_mcp.model.bert_graph import _GraphBuilder

WORD_TABLE = "embeddings.word_embeddings.weight"


class ExternalWeights:
    """Float32 tensors by their Hugging Face BERT name, and optionally the word table as
    int8 rows with a scale each (``table``), widened only for the rows a batch reads.

    ``arrays`` collects each initializer's name and array as the graph is built.
    """

    transposable = True
    named_by_key = True  # each initializer is called by its tensor's name: see ``feeds``
    probe = "word_table_s"  # ``session_copied`` doubles it: the word table's scales

    def __init__(
        self,
        tensors: Mapping[str, npt.NDArray[Any]],
        table: tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]] | None = None,
    ) -> None:
        self.tensors = tensors
        self.table = table
        self.arrays: dict[str, npt.NDArray[Any]] = {}

    def initializer(self, key: str, name: str, transpose: bool) -> onnx.TensorProto:
        """The tensor ``key`` (transposed if asked: a view, no copy when the array is a
        transposed view already), declared external."""
        array = self.tensors[key]
        return self.external(name, array.T if transpose else array)

    def feeds(self) -> dict[str, npt.NDArray[Any]]:
        """Every array the graph declares, by name, worked out without building it (the
        graph is built in another process, or read back from the index folder): the
        products transposed as ``bert_graph`` asks for them, the rest as they are."""
        out = {
            key: np.ascontiguousarray(array.T if _is_product(key) else array)
            for key, array in self.tensors.items()
        }
        if self.table is not None:
            out["word_table_q"], out["word_table_s"] = self.table
        return out

    def lookup(self, g: _GraphBuilder, ids: str) -> str:
        """The word table's rows for ``ids``: int8 rows times their scales, or the rows."""
        if self.table is None:
            return g.op("Gather", [g.weight(WORD_TABLE), ids], "words", axis=0)
        values, scales = self.table
        rows = g.op("Gather", [self.add(g, "word_table_q", values), ids], "words_q", axis=0)
        widened = g.op("Cast", [rows], "words_f", to=1)  # 1 = FLOAT
        row_scales = g.op("Gather", [self.add(g, "word_table_s", scales), ids], "words_s", axis=0)
        return g.op("Mul", [widened, row_scales], "words")

    def add(self, g: _GraphBuilder, name: str, array: npt.NDArray[Any]) -> str:
        """Declare ``array`` as an initializer called ``name``; return the name."""
        g.initializers.append(self.external(name, array))
        return name

    def external(self, name: str, array: npt.NDArray[Any]) -> onnx.TensorProto:
        """An initializer with no data in it, the array kept in ``arrays`` to hand over."""
        from onnx import TensorProto, helper

        array = np.ascontiguousarray(array)
        self.arrays[name] = array
        data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
        tensor = TensorProto(name=name, data_type=data_type, dims=array.shape)
        tensor.data_location = TensorProto.EXTERNAL
        for field, value in (("location", "in-memory"), ("offset", "0"), ("length", "0")):
            tensor.external_data.add(key=field, value=value)
        return tensor


def _is_product(key: str) -> bool:
    """Whether ``key`` is the weight of one of a layer's products (an ``nn.Linear``)."""
    return key.startswith("encoder.layer.") and key.endswith(".weight") and "LayerNorm" not in key


def add_arrays(options: onnxruntime.SessionOptions, arrays: Mapping[str, Any]) -> None:
    """Give the session ``arrays`` for the graph's external initializers of those names."""
    import onnxruntime as ort

    names = list(arrays)
    values = [ort.OrtValue.ortvalue_from_numpy(arrays[name]) for name in names]
    options.add_external_initializers(names, values)


def session_copied(
    session: onnxruntime.InferenceSession,
    arrays: Mapping[str, Any],
    probe: str,
    feeds: Mapping[str, Any],
) -> bool:
    """Whether ``session`` holds its own copy of the ``arrays`` it was given.

    onnxruntime (1.32) copies each external initializer into the session as it starts, so
    the arrays only double the model's memory (e5: 11 MB at 4-bit, MiniLM: 50) once it has; but its
    contract lets it use them where they lie. So ask it: double the array ``probe`` (one
    ``feeds`` reads) for a moment; a session that reads the arrays embeds ``feeds``
    differently. The array is put back whatever the answer (a power of two, exactly). An
    array that cannot be written (a view of a file's bytes) gives no answer: the arrays
    are kept.
    """
    array = arrays.get(probe)
    if array is None or not array.flags.writeable:
        return False
    before = session.run(None, dict(feeds))[0]
    array *= 2
    try:
        after = session.run(None, dict(feeds))[0]
    finally:
        array /= 2
    return bool(np.array_equal(before, after))


class Int8Products(ExternalWeights):
    """MiniLM with each product run on its int8 weights as shipped (``--model-precision
    int8``): onnxruntime's ``DynamicQuantizeMatMul`` quantizes the activations per batch
    to uint8 and multiplies them by the int8 ``[in, out]`` matrix, a scale per column.

    The feed-forward output products of the first three layers stay float32: their
    inputs (GELU's outputs) hold the few large values that per-batch quantization of the
    activations handles worst, and they account for most of int8's departure from fp32
    (docs/benchmarks.md, "MiniLM int8 with three products in float32").

    ``products``: each ``nn.Linear``'s int8 matrix and scales, by its name.
    """

    kept_fp32 = frozenset(f"encoder.layer.{layer}.output.dense" for layer in range(3))

    def __init__(
        self,
        tensors: Mapping[str, npt.NDArray[Any]],
        table: tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]],
        products: Mapping[str, tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]],
    ) -> None:
        super().__init__(tensors, table)
        self.products = products

    def linear(self, g: _GraphBuilder, x: str, prefix: str) -> str:
        """``x @ W.T + b`` on the int8 matrix stored under ``prefix`` (or, for one of
        ``kept_fp32``, on its widened copy)."""
        if prefix in self.kept_fp32:
            product = g.op("MatMul", [x, g.weight(f"{prefix}.weight", transpose=True)], "matmul")
            return g.op("Add", [product, g.weight(f"{prefix}.bias")], "bias")
        values, scales = self.products[prefix]
        inputs = [
            x,
            self.add(g, f"{prefix}.weight_q", values),
            self.add(g, f"{prefix}.weight_scale", scales),
            "",  # zero points: none, the weights are symmetric
            g.weight(f"{prefix}.bias"),
        ]
        return g.op("DynamicQuantizeMatMul", inputs, "qmatmul", domain="com.microsoft")

    def feeds(self) -> dict[str, npt.NDArray[Any]]:
        """Every array the graph declares: the int8 products in place of the widened,
        but for ``kept_fp32``, widened and transposed as for fp32."""
        out = {
            key: np.ascontiguousarray(array.T if _is_product(key) else array)
            for key, array in self.tensors.items()
            if not _is_product(key) or key.removesuffix(".weight") in self.kept_fp32
        }
        for prefix, (values, scales) in self.products.items():
            if prefix in self.kept_fp32:
                continue
            out[f"{prefix}.weight_q"] = np.ascontiguousarray(values)
            out[f"{prefix}.weight_scale"] = np.ascontiguousarray(scales)
        if self.table is not None:
            out["word_table_q"], out["word_table_s"] = self.table
        return out
