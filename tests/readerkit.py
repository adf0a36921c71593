"""Readers a test adds to a pass's registry by naming this module (``Settings.readers``).

The reader process imports it itself (``ingest/extra_readers.py``). A ``.png`` here is
not read by OCR: its reader waits until a file of the same name plus ``.go`` appears
beside it (a test lets it go by writing that file; one that never does has a reader that
waits until it is killed), then takes the file's bytes as its text.
"""

from __future__ import annotations

import os
from pathlib import Path

from micro_rag_mcp.ingest.readers import Document
from tests.waiting import eventually

GATE_SUFFIX = ".go"
WAITING_SUFFIX = ".waiting"  # written beside the file once its reader waits


def gate(path: Path) -> Path:
    return path.with_name(path.name + GATE_SUFFIX)


def waiting(path: Path) -> Path:
    return path.with_name(path.name + WAITING_SUFFIX)


def read_when_let_go(path: Path) -> Document:
    real = Path(os.path.realpath(path))  # the reader is given /proc/self/fd/N
    waiting(real).touch()
    # Killed with its reader by a test that never lets it go; the deadline only keeps a
    # forgotten reader from waiting for ever.
    eventually(gate(real).exists, f"the gate of {real.name}", timeout=600)
    return Document(real.read_text(encoding="utf-8"))


READERS = {".png": read_when_let_go}
