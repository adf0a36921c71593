"""``PieceIndex`` finds exactly the pieces a dict of them would, colliding keys or not."""

from __future__ import annotations

import numpy as np
import pytest

from micro_rag_mcp.model.packed_e5 import E5Vocabulary
from micro_rag_mcp.model.piece_index import PieceIndex

# "pu" and "異" hash alike in Python (the same two stored bytes); "<unk>" is left out
PIECES = ["<unk>", "▁", "▁a", "a", "ab", "abc", "b", "c", "pu", "異", "p", "u", "ü", "🙂", "▁東京"]


def _vocabulary(pieces: list[str]) -> E5Vocabulary:
    encoded = [piece.encode("utf-8") for piece in pieces]
    offsets = np.cumsum([0] + [len(piece) for piece in encoded]).astype(np.uint32)
    scores = -np.arange(len(pieces), dtype=np.float32)
    return E5Vocabulary(b"".join(encoded), offsets, scores, {}, 0, 0, 0, 0)


def _substrings(words: list[str]) -> list[str]:
    return [w[a:b] for w in words for a in range(len(w)) for b in range(a + 1, len(w) + 1)]


def _as_a(text: str) -> int:
    """Every text not a piece filed where ``"a"`` is (one of them, ``"x"``, as long)."""
    return hash(text if text in PIECES else "a")


@pytest.mark.parametrize(
    "key", [hash, len, lambda text: 7, _as_a], ids=["hash", "length", "one", "as-a"]
)
def test_every_substring_is_found_as_a_dict_finds_it(key: object) -> None:
    index = PieceIndex(_vocabulary(PIECES), leave_out=0, key=key)  # type: ignore[arg-type]
    texts = _substrings(["▁abc", "▁pu異", "üp🙂", "▁東京a", "<unk>", "x"])
    ks, ids = index.find(texts, np.array([len(text) for text in texts]))
    want = {text: i for i, text in enumerate(PIECES) if i != 0}
    assert dict(zip(ks.tolist(), ids.tolist(), strict=True)) == {
        k: want[text] for k, text in enumerate(texts) if text in want
    }
    assert index.longest == len("<unk>")


def test_a_piece_listed_twice_is_found_as_its_last_id() -> None:
    index = PieceIndex(_vocabulary(["<unk>", "a", "b", "a"]), leave_out=0)
    ks, ids = index.find(["a", "b", "c"], np.array([1, 1, 1]))
    assert (ks.tolist(), ids.tolist()) == ([0, 1], [3, 2])
