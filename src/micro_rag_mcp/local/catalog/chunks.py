"""The catalog's chunk reads: ids, texts, vector keys and heads of chunks by id, key or
file, as a search or a vector pass needs them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from micro_rag_mcp.core.batches import batched
from micro_rag_mcp.core.formats import is_code, may_read_as_code
from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.local.catalog.packed import stored_chunk, unpack
from micro_rag_mcp.text.code_text import reads_as_code

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class ChunkReads:
    """The chunk reads of one catalog connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def chunk_ids(self) -> list[int]:
        return [int(r[0]) for r in self._conn.execute("SELECT id FROM chunks ORDER BY id")]

    def chunk_ids_after(self, after: int, limit: int) -> list[int]:
        """Up to ``limit`` chunk ids above ``after``, in order: chunks stored since then."""
        rows = self._conn.execute(
            "SELECT id FROM chunks WHERE id > ? ORDER BY id LIMIT ?", (after, limit)
        )
        return [int(r[0]) for r in rows]

    def count_chunks_after(self, after: int) -> int:
        row = self._conn.execute("SELECT count(*) FROM chunks WHERE id > ?", (after,)).fetchone()
        return int(row[0])

    def chunk_texts(self, ids: Iterable[int]) -> dict[int, tuple[int, str, str]]:
        """Vector key, title and text of the given chunk ids that still exist."""
        rows = self._select_ids("SELECT id, vkey, title, text FROM chunks WHERE id IN ({})", ids)
        return {int(cid): (int(key), str(title), unpack(text)) for cid, key, title, text in rows}

    def heads_after(self, after: int, within: int, limit: int) -> list[tuple[int, int, str]]:
        """Up to ``limit`` chunks above id ``after`` that begin in their file's first
        ``within`` characters, in order, as (id, file id, text): a file's opening text."""
        rows = self._conn.execute(
            "SELECT id, file_id, text FROM chunks WHERE id > ? AND char_start < ?"
            " ORDER BY id LIMIT ?",
            (after, within, limit),
        )
        return [(int(cid), int(fid), str(text)) for cid, fid, text in rows]

    def id_keys(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Every chunk id, in order, and the vector key of each."""
        import numpy as np

        rows = self._conn.execute("SELECT id, vkey FROM chunks ORDER BY id").fetchall()
        pairs = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0].copy(), pairs[:, 1].copy()

    def keys_of(self, ids: Iterable[int]) -> dict[int, int]:
        """The vector key of each given chunk id that still exists."""
        rows = self._select_ids("SELECT id, vkey FROM chunks WHERE id IN ({})", ids)
        return {int(cid): int(key) for cid, key in rows}

    def chunks_of_keys(self, keys: Iterable[int]) -> dict[int, list[int]]:
        """The chunk ids that carry each given vector key (none for a key no chunk has)."""
        found: dict[int, list[int]] = {}
        for key, cid in self._select_ids(
            "SELECT vkey, id FROM chunks WHERE vkey IN ({}) ORDER BY id", keys
        ):
            found.setdefault(int(key), []).append(int(cid))
        return found

    def file_chunk_ids(self, path: str) -> list[int]:
        """The chunk ids of one file, in order."""
        rows = self._conn.execute(
            "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ?"
            " ORDER BY c.chunk_index",
            (path,),
        )
        return [int(r[0]) for r in rows]

    def fetch(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        """The chunks (joined with their files) for the given ids that still exist."""
        rows = self._select_ids(
            "SELECT c.id, f.path, f.ext, f.mtime_ns, c.chunk_index, c.char_start, c.char_end,"
            " c.line_start, c.line_end, c.page, c.text, f.size, c.section, c.locator"
            " FROM chunks c"
            " JOIN files f ON f.id = c.file_id WHERE c.id IN ({})",
            ids,
        )
        return {int(r[0]): stored_chunk(r) for r in rows}

    def first_chunks(self, file_ids: Sequence[int]) -> dict[int, int]:
        """For each given file id, the id of its first chunk."""
        rows = self._select_ids(
            "SELECT file_id, id FROM chunks WHERE chunk_index = 0 AND file_id IN ({})", file_ids
        )
        return {int(f): int(c) for f, c in rows}

    def head_ids(self, ids: Sequence[int]) -> dict[int, int]:
        """For each given chunk id, the id of the first chunk of the same file."""
        rows = self._select_ids(
            "SELECT c.id, h.id FROM chunks c JOIN chunks h"
            " ON h.file_id = c.file_id AND h.chunk_index = 0 WHERE c.id IN ({})",
            ids,
        )
        return {int(c): int(h) for c, h in rows}

    def code_chunks(self, ids: Sequence[int]) -> frozenset[int]:
        """The given chunk ids whose file is source code (``formats.is_code``) or whose
        text reads as code in a file that may hold some (``formats.may_read_as_code``)."""
        rows = self._select_ids(
            "SELECT c.id, f.path, c.text FROM chunks c JOIN files f ON f.id = c.file_id"
            " WHERE c.id IN ({})",
            ids,
        )
        return frozenset(
            int(c)
            for c, path, text in rows
            if is_code(path) or (may_read_as_code(path) and reads_as_code(unpack(text)))
        )

    def _select_ids(self, sql: str, ids: Iterable[int]) -> Iterator[tuple[Any, ...]]:
        """Rows of ``sql`` (whose ``{}`` is the id list) for the ids, 500 at a time."""
        for batch in batched(list(ids), 500):
            yield from self._conn.execute(sql.format(",".join("?" * len(batch))), batch)
