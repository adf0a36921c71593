"""Hybrid retrieval: FAISS and FTS5 candidates, fused on their scores.

Each channel proposes its best ``depth`` chunks; ``fusion.fuse`` ranks them (how, and
why, is told there). Scores, not ranks, are fused: a rare exact term that the keyword
channel finds far ahead of everything else keeps that lead, where reciprocal rank fusion
would flatten it to "rank 1" and let merely similar chunks overtake it. A channel that
finds nothing adds nothing to anyone.

``score`` is always the cosine similarity of the chunk to the query, whichever channel
found it, so ``score_threshold`` means one thing. The threshold cuts only passages the
keyword channel did not find: a passage that contains the query's words is kept on that
evidence (an identifier, a name, a word in a script the vector model does not know can
have a low cosine and still be exactly what was asked for). While vectors are being made,
the best keyword candidates that have none are embedded with the query (``EMBED_NOW``);
any other chunk with no vector yet carries no score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from micro_rag_mcp.core.results import Found
from micro_rag_mcp.local.answers.keywords import keyword_hits as keyword_channel
from micro_rag_mcp.local.answers.keywords import or_query
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.catalog.grams import FILE_GRAMS_KEY
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.search.documents import by_documents, document_terms, summed
from micro_rag_mcp.search.fusion import CODE_SAMPLE, Candidates, SearchParams, best_hits, fuse
from micro_rag_mcp.search.plan import QueryPlan, plan_query
from micro_rag_mcp.search.scope import Resolved
from micro_rag_mcp.search.terms import idf_sum, searched_terms
from micro_rag_mcp.text.vector_text import embedding_text

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DEFAULT_PARAMS = SearchParams()


# While vectors are being made, the best keyword candidates without one (and their files'
# first chunks) are embedded with the query, this many at most: they are then ranked as
# they will be once the index is complete, for a fraction of a second per search.
EMBED_NOW = 8


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


def hybrid_search(
    catalog: Catalog,
    vectors: VectorStore | None,
    query: str,
    query_vector: npt.NDArray[np.float32] | None,
    *,
    top_k: int,
    score_threshold: float,
    params: SearchParams = DEFAULT_PARAMS,
    within: Resolved | None = None,
    embed: Callable[[Sequence[str]], npt.NDArray[np.float32]] | None = None,
) -> Found:
    """The best ``top_k`` chunks for the query, from every channel that is available
    (from the files of ``within`` only, if given; ``embed``: the model's, to embed the
    best keyword candidates that have no vector yet).

    Candidates are fused first; rows (text and citation) are then fetched best first, a
    window at a time, until ``top_k`` pass the threshold, all in one read snapshot.
    """
    side = None
    if query_vector is not None and vectors is not None and "vector" in params.channels:
        keys = within.keys if within is not None else None
        hits = vectors.search(query_vector, params.depth, keys)
        chunks = within.chunk_ids if within is not None else None
        side = VectorSide(vectors, query_vector, hits, chunks, embed)
    return search_beside(
        catalog,
        query,
        lambda: side,
        top_k=top_k,
        score_threshold=score_threshold,
        params=params,
        files=within.file_ids if within is not None else None,
    )


def search_beside(
    catalog: Catalog,
    query: str,
    vector_side: Callable[[], VectorSide | None],
    *,
    top_k: int,
    score_threshold: float,
    params: SearchParams = DEFAULT_PARAMS,
    files: Sequence[int] | None = None,
    all_code: bool = False,
) -> Found:
    """``hybrid_search`` whose vector channel runs elsewhere: ``vector_side`` waits for it
    (None: it did not run). It is asked once the keyword channel is done, so a caller that
    starts the query's embedding and vector search in another thread first has both
    channels run at once (SQLite, onnxruntime and FAISS let go of the GIL). With
    ``files``, the keyword channel takes chunks of those file ids only; the vector side
    is expected to keep to the same scope. ``all_code``: whether every file the folder's suffixes
    take in is code; else which keyword matches are code (told apart, see fusion.py) is
    looked up, by their file's suffix and their text.
    """
    plan = plan_query(query, params)
    with catalog.snapshot():
        keyword_hits, keyword_idf = keyword_evidence(catalog, plan, params, files)
        side = vector_side() if "vector" in params.channels else None
        vector_hits = side.chunk_hits(catalog, params.depth) if side is not None else []
        cosine = dict(vector_hits)
        heads: dict[int, int] = {}
        head_cosine: dict[int, float] = {}
        in_code: frozenset[int] = frozenset()
        identifier = False
        if side is not None:
            # Keyword candidates get their cosine too: the threshold and the fusion use it.
            unscored = [cid for cid, _ in keyword_hits if cid not in cosine]
            cosine.update(side.similarity(catalog, unscored))
            best = [cid for cid, _ in keyword_hits if cid not in cosine][:EMBED_NOW]
            cosine.update(side.embedded(catalog, best))
            if params.head_weight != 0:
                # Every candidate's: a passage without a vector is judged by its file's.
                heads = catalog.chunks.head_ids(
                    list(cosine.keys() | {cid for cid, _ in keyword_hits})
                )
                missing = [h for h in set(heads.values()) if h not in cosine]
                head_cosine = side.similarity(catalog, missing)
                known = cosine.keys() | head_cosine.keys()
                lacking = dict.fromkeys(h for c in best if (h := heads.get(c, c)) not in known)
                head_cosine.update(side.embedded(catalog, list(lacking)[: EMBED_NOW - len(best)]))
            identifier = plan.identifier
            sampled = keyword_hits[:CODE_SAMPLE]
            judged = [cid for cid, _ in sampled if cid in cosine]  # as prose_share counts
            if params.judge_code and not identifier:
                in_code = frozenset(judged) if all_code else catalog.chunks.code_chunks(judged)
        ranking = fuse(
            Candidates(
                vector=vector_hits,
                keyword=keyword_hits,
                cosine=cosine,
                heads=heads,
                head_cosine=head_cosine,
                vector_ran=side is not None,
                keyword_ran=plan.keyword,
                keyword_idf=keyword_idf,
                read_share=plan.read_share,
                code=in_code,
                identifier=identifier,
            ),
            params,
        )
        return best_hits(catalog.chunks.fetch, ranking, top_k, score_threshold)


def keyword_candidates(
    catalog: Catalog, query: str, params: SearchParams, files: Sequence[int] | None = None
) -> tuple[list[tuple[int, float]], bool]:
    """The keyword channel's best ``depth`` chunks with their BM25 scores (of ``files``
    only, if given), and whether it ran at all (the query has a word, or a CJK run, and
    the channel is on)."""
    plan = plan_query(query, params)
    hits, _ = keyword_evidence(catalog, plan, params, files)
    return hits, plan.keyword


def keyword_evidence(
    catalog: Catalog, plan: QueryPlan, params: SearchParams, files: Sequence[int] | None = None
) -> tuple[list[tuple[int, float]], float]:
    """The keyword channel's best ``depth`` chunks for the plan, and the summed idf of
    the words and pairs searched."""
    if not plan.keyword:
        return [], 0.0
    hits: list[tuple[int, float]] = []
    weight = 0.0
    if plan.words:
        weights = (params.title_weight, 1.0)
        hits, weight = keyword_channel(catalog, plan.words, params.depth, weights, files)
    if plan.grams:  # CJK runs are found by their bigrams (see cjk.py)
        grams = list(plan.grams)
        shares, rows = catalog.terms.shares_among(grams, table="chunks_cjk")
        searched = searched_terms(grams, shares)
        weight += idf_sum(searched, shares, rows)
        passages = catalog.keywords.cjk_search(or_query(searched), params.depth, files)
        if plan.whole_files:
            passages = with_documents(catalog, plan.grams, shares, passages, params.depth, files)
        hits = summed(hits, passages)
    return hits, weight


def with_documents(
    catalog: Catalog,
    counts: Mapping[str, int],
    shares: Mapping[str, float],
    passages: Sequence[tuple[int, float]],
    depth: int,
    files: Sequence[int] | None,
) -> list[tuple[int, float]]:
    """The keyword hits of a long CJK query, ranked by their files' match of the whole
    query (``grams.py``, ``documents.by_documents``)."""
    if catalog.get_meta(FILE_GRAMS_KEY) != "1":  # made before, its rows not all written yet
        return list(passages)
    kept = document_terms(counts, shares)
    documents = catalog.keywords.cjk_file_search(or_query(kept), depth, files) if kept else []
    if not documents:
        return list(passages)
    head_of = catalog.chunks.head_ids([cid for cid, _ in passages])
    first_of = catalog.chunks.first_chunks([fid for fid, _ in documents])
    return by_documents(passages, documents, head_of, first_of)
