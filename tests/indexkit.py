"""What an index folder holds, read straight from its files: for tests of several modules."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from micro_rag_mcp.local.vectors import VectorStore


def vector_ids(index: Path, dimension: int = 64) -> set[int]:
    """The ids (vector keys) of the saved vector file."""
    store = VectorStore.load(index / "faiss.index", dimension)
    return {int(i) for i in store.ids()}


def chunk_keys(index: Path) -> set[int]:
    """The vector keys the catalog's chunks carry: what the saved vectors should be."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    keys = {int(r[0]) for r in conn.execute("SELECT vkey FROM chunks")}
    conn.close()
    return keys
