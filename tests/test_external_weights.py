"""``session_copied``: whether a session still reads the arrays it was given."""

from __future__ import annotations

from typing import Any

import numpy as np

from micro_rag_mcp.model.external_weights import session_copied

ONE = {"input_ids": np.ones((1, 1), dtype=np.int64)}


class _Session:
    """A stand-in session whose one output is the word table's scales row of the token
    fed, read from ``table`` at each run (a session that reads the arrays in place) or
    from a copy taken when it starts."""

    def __init__(self, table: np.ndarray[Any, Any], copies: bool) -> None:
        self.table = table.copy() if copies else table

    def run(self, _outputs: None, feeds: dict[str, Any]) -> list[np.ndarray[Any, Any]]:
        return [self.table[int(feeds["input_ids"][0, 0])].copy()]


def test_a_session_that_reads_the_arrays_in_place_keeps_them_and_the_row_is_restored() -> None:
    scales = np.linspace(0.5, 3.0, 12, dtype=np.float32).reshape(4, 3)
    before = scales.copy()
    assert not session_copied(_Session(scales, copies=False), {"s": scales}, "s", ONE)
    assert np.array_equal(scales, before)


def test_a_session_that_copied_the_arrays_lets_them_go() -> None:
    scales = np.linspace(0.5, 3.0, 12, dtype=np.float32).reshape(4, 3)
    before = scales.copy()
    assert session_copied(_Session(scales, copies=True), {"s": scales}, "s", ONE)
    assert np.array_equal(scales, before)


def test_arrays_that_cannot_be_written_or_are_missing_are_kept() -> None:
    scales = np.frombuffer(bytes(48), dtype=np.float32).reshape(4, 3)
    assert not session_copied(_Session(scales, copies=True), {"s": scales}, "s", ONE)
    assert not session_copied(_Session(scales, copies=True), {}, "s", ONE)
