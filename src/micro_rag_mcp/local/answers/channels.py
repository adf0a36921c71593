"""The embedded store's channels (``gather.Channels``): FTS5 for words, CJK pairs and
whole files, FAISS for vectors, the catalog for heads, code and rows.

``VectorSide`` is the vector channel's part of a search: the query's vector and its hits
(made in another thread while the keyword channel runs when ``searcher`` searches, first
when ``hybrid_search`` does). While vectors
are being made, a passage without one is embedded with the query when ``gather`` asks
(``embed``, the model's); any other chunk with no vector yet carries no score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.local.answers.keywords import keyword_hits, or_query
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.catalog.grams import FILE_GRAMS_KEY
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.search.documents import document_terms
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.gather import Hits, KeywordHits
from micro_rag_mcp.search.plan import QueryPlan
from micro_rag_mcp.search.terms import idf_sum, searched_terms
from micro_rag_mcp.text.vector_text import embedding_text

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class VectorSide:
    """The vector channel's part of one search: the store, the query's vector, its hits
    (vector keys, see ``vector_text``). Chunks are found through the keys they carry.
    ``embed`` (the model's, if given) makes the vectors of passages that have none yet."""

    store: VectorStore
    query_vector: npt.NDArray[np.float32]
    hits: list[tuple[int, float]]
    within: npt.NDArray[np.int64] | None = None  # a scope's chunk ids, sorted
    embed: Callable[[Sequence[str]], npt.NDArray[np.float32]] | None = None

    def chunk_hits(self, catalog: Catalog, limit: int) -> list[tuple[int, float]]:
        """The hits as chunks, best first: every chunk of a hit's text (in the scope, if
        one is given: a text shared by a file outside it is not its), up to ``limit``."""
        chunks = catalog.chunks.chunks_of_keys([key for key, _ in self.hits])
        found = [(cid, cos) for key, cos in self.hits for cid in chunks.get(key, ())]
        if self.within is not None:
            if self.within.size == 0:
                return []
            import numpy as np

            ids = np.asarray([cid for cid, _ in found], dtype=np.int64)
            at = np.minimum(np.searchsorted(self.within, ids), self.within.size - 1)
            inside = self.within[at] == ids
            found = [hit for hit, keep in zip(found, inside.tolist(), strict=True) if keep]
        return found[:limit]

    def similarity(self, catalog: Catalog, ids: Sequence[int]) -> dict[int, float]:
        """The query's cosine to each given chunk whose text has a vector."""
        keys = catalog.chunks.keys_of(ids)
        cosine = self.store.similarity(self.query_vector, list(set(keys.values())))
        return {cid: cosine[key] for cid, key in keys.items() if key in cosine}

    def embedded(self, catalog: Catalog, ids: Sequence[int]) -> dict[int, float]:
        """The query's cosine to each given chunk, its text embedded now (no ``embed``:
        none). For the few passages a search needs before the pass gets to them."""
        if self.embed is None or not ids:
            return {}
        texts = catalog.chunks.chunk_texts(ids)
        found = [cid for cid in dict.fromkeys(ids) if cid in texts]
        if not found:
            return {}
        vectors = self.embed([embedding_text(texts[c][1], texts[c][2]) for c in found])
        cosine = vectors @ self.query_vector
        return {cid: float(score) for cid, score in zip(found, cosine.tolist(), strict=True)}


@dataclass(slots=True)
class CatalogChannels:
    """The channels of one catalog, in one read snapshot (the caller's).

    ``vector_side`` waits for the vector channel's part (None: it did not run); it is
    asked once the keyword channel is done. ``files``: the keyword channel takes chunks
    of these file ids only (the vector side keeps to the same scope). ``all_code``:
    whether every file the folder's suffixes take in is code; else which passages are
    code is looked up, by their file's suffix and their text.
    """

    catalog: Catalog
    vector_side: Callable[[], VectorSide | None] = lambda: None
    files: Sequence[int] | None = None
    all_code: bool = False
    _side: VectorSide | None = None
    _gram_shares: Mapping[str, float] = field(default_factory=dict)

    def keyword_hits(self, plan: QueryPlan, params: SearchParams) -> KeywordHits:
        words: Hits = []
        pairs: Hits = []
        weight = 0.0
        if plan.words:
            weights = (params.title_weight, 1.0)
            words, weight = keyword_hits(
                self.catalog, plan.words, params.depth, weights, self.files, alone=not plan.grams
            )
        if plan.grams:  # CJK runs are found by their bigrams (see cjk.py)
            grams = list(plan.grams)
            shares, rows = self.catalog.terms.shares_among(grams, table="chunks_cjk")
            self._gram_shares = shares  # the whole-file match chooses its pairs by them
            searched = searched_terms(grams, shares)
            weight += idf_sum(searched, shares, rows)
            pairs = self.catalog.keywords.cjk_search(or_query(searched), params.depth, self.files)
        return KeywordHits(words, pairs, weight)

    def document_hits(self, plan: QueryPlan, depth: int) -> Hits:
        if self.catalog.get_meta(FILE_GRAMS_KEY) != "1":  # made before, its rows not all written
            return []
        kept = document_terms(plan.grams, self._gram_shares)
        if not kept:
            return []
        documents = self.catalog.keywords.cjk_file_search(or_query(kept), depth, self.files)
        first_of = self.catalog.chunks.first_chunks([fid for fid, _ in documents])
        return [(first_of.get(fid, -1), score) for fid, score in documents]

    def vector_hits(self, depth: int) -> Hits | None:
        self._side = self.vector_side()
        return self._side.chunk_hits(self.catalog, depth) if self._side is not None else None

    def heads(self, ids: Sequence[int]) -> Mapping[int, int]:
        return self.catalog.chunks.head_ids(ids)

    def cosines(self, ids: Sequence[int]) -> Mapping[int, float]:
        return self._side.similarity(self.catalog, ids) if self._side is not None else {}

    def embedded(self, ids: Sequence[int]) -> Mapping[int, float]:
        return self._side.embedded(self.catalog, ids) if self._side is not None else {}

    def code_passages(self, ids: Sequence[int]) -> frozenset[int]:
        return frozenset(ids) if self.all_code else self.catalog.chunks.code_chunks(ids)

    def fetch(self, ids: Sequence[int]) -> Mapping[int, StoredChunk]:
        return self.catalog.chunks.fetch(ids)
