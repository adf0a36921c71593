"""A Milvus store's channels (``gather.Channels``): Milvus proposes, ``search.gather``
decides.

Milvus gives each channel's candidates (dense by inner product of unit vectors, which is
the cosine; keyword by its BM25 function, scored again as FTS5 scores them by
``keywords``; whole files likewise, by ``whole_files``). Candidates of a version that is
not their file's current one are dropped (a write in progress, or one a killed worker
left); the cosines the fusion needs are computed here from the stored vectors. Each file
row is read once per search, so every channel judges a file by the same version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from micro_rag_mcp.core.formats import is_code, may_read_as_code
from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.milvus.cjk_words import gram_token
from micro_rag_mcp.milvus.index import MilvusIndex
from micro_rag_mcp.milvus.keywords import KeywordStats, keyword_parts
from micro_rag_mcp.milvus.rows import ChunkHit, FileRow, stored_chunk
from micro_rag_mcp.milvus.whole_files import FileStats, whole_file_hits
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.gather import Hits, KeywordHits
from micro_rag_mcp.search.plan import QueryPlan
from micro_rag_mcp.text.code_text import reads_as_code

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class StoreChannels:
    """The channels of one Milvus collection for one search (``query_vector``: None
    without the model, and the vector channel does not run)."""

    def __init__(
        self,
        index: MilvusIndex,
        stats: KeywordStats,
        files_stats: FileStats,
        query_vector: npt.NDArray[np.float32] | None,
    ) -> None:
        self._index = index
        self._stats = stats
        self._files_stats = files_stats
        self._query_vector = query_vector
        self._files: dict[str, FileRow] = {}  # file rows read so far
        self._path_of: dict[int, str] = {}  # the path of each chunk a channel found
        self._chunks = 0  # the collection's chunks, counted for the keyword channel

    def keyword_hits(self, plan: QueryPlan, params: SearchParams) -> KeywordHits:
        # CJK runs are found by their bigrams, searched with the words (see cjk.py).
        terms = list(plan.words)
        grams = [gram_token(g) for g in plan.grams]
        self._chunks = self._index.count_chunks() if terms or grams else 0
        by_words, by_pairs, idf = keyword_parts(
            self._index, self._stats, terms, grams, params.depth, self._chunks
        )
        return KeywordHits(self._current(by_words), self._current(by_pairs), idf)

    def document_hits(self, plan: QueryPlan, depth: int) -> Hits:
        documents = whole_file_hits(
            self._index,
            self._stats,
            self._files_stats,
            plan.grams,
            depth,
            self._chunks,
            self._files,
        )
        best: dict[str, float] = {}  # each current file's best row
        for path, version, score in documents:  # best first
            row = self._files.get(path)
            if row is not None and row.record.status == "ok" and row.version == version:
                best.setdefault(path, score)
        return [(self._files[p].head_id, score) for p, score in list(best.items())[:depth]]

    def vector_hits(self, depth: int) -> Hits | None:
        if self._query_vector is None:
            return None
        return self._current(self._index.dense(self._query_vector, depth))

    def heads(self, ids: Sequence[int]) -> Mapping[int, int]:
        head_of = {p: r.head_id for p, r in self._files.items() if r.head_id >= 0}
        firsts = set(head_of.values())  # a file's first chunk, shown for its file
        heads: dict[int, int] = {}
        for cid in ids:
            path = self._path_of.get(cid)
            if path in head_of:
                heads[cid] = head_of[path]
            elif cid in firsts:
                heads[cid] = cid
        return heads

    def cosines(self, ids: Sequence[int]) -> Mapping[int, float]:
        if self._query_vector is None:
            return {}
        vectors = self._index.vectors(sorted(ids))
        if not vectors:
            return {}
        import numpy as np

        found = list(vectors)
        matrix = np.asarray([vectors[i] for i in found], dtype=np.float32)
        cosine = (matrix @ self._query_vector).astype(float).tolist()
        return dict(zip(found, cosine, strict=True))

    def embedded(self, ids: Sequence[int]) -> Mapping[int, float]:
        return {}  # every passage is stored with its vector

    def code_passages(self, ids: Sequence[int]) -> frozenset[int]:
        # By their file's suffix, else by their text (as catalog.chunks.code_chunks).
        path_of = {r.head_id: p for p, r in self._files.items()} | self._path_of
        by_path = {cid for cid in ids if is_code(path_of.get(cid, ""))}
        told = [cid for cid in ids if may_read_as_code(path_of.get(cid, ""))]
        texts = self._index.texts(told) if told else {}
        return frozenset(by_path | {cid for cid, text in texts.items() if reads_as_code(text)})

    def fetch(self, ids: Sequence[int]) -> Mapping[int, StoredChunk]:
        current = self._versions()
        return {
            int(r["id"]): stored_chunk(r, self._files[r["path"]].record)
            for r in self._index.chunk_rows(ids)
            if current.get(r["path"]) == int(r["version"])
        }

    def _current(self, hits: Sequence[ChunkHit]) -> list[tuple[int, float]]:
        """The hits whose chunk belongs to its file's current version, best first."""
        self._read({h.path for h in hits})
        self._path_of.update((h.id, h.path) for h in hits)
        current = self._versions()
        return [(h.id, h.score) for h in hits if current.get(h.path) == h.version]

    def _read(self, paths: Iterable[str]) -> None:
        self._files.update(self._index.file_rows(set(paths) - self._files.keys()))

    def _versions(self) -> dict[str, int]:
        return {p: r.version for p, r in self._files.items() if r.record.status == "ok"}
