"""Hybrid search over a Milvus store: Milvus proposes, ``search.fusion.fuse`` ranks.

Milvus gives each channel's candidates (dense by inner product of unit vectors, which
is the cosine; keyword by its BM25 function, scored again as FTS5 scores them by
``milvus_keywords``). Candidates of a version that is not their
file's current one are dropped (a write in progress, or one a killed worker left), the
cosines the fusion needs are computed here from the stored vectors, and the ranking and
threshold are the embedded store's own (``fuse``, ``best_hits``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from micro_rag_mcp.core.formats import is_code, may_read_as_code
from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.core.results import Found
from micro_rag_mcp.milvus.cjk_words import gram_token
from micro_rag_mcp.milvus.index import MilvusIndex
from micro_rag_mcp.milvus.keywords import KeywordStats, keyword_parts
from micro_rag_mcp.milvus.rows import ChunkHit, FileRow, stored_chunk
from micro_rag_mcp.milvus.whole_files import FileStats, whole_file_hits
from micro_rag_mcp.search.documents import by_documents, summed
from micro_rag_mcp.search.fusion import CODE_SAMPLE, Candidates, SearchParams, best_hits, fuse
from micro_rag_mcp.search.plan import plan_query
from micro_rag_mcp.text.code_text import reads_as_code

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def store_search(
    index: MilvusIndex,
    stats: KeywordStats,
    files_stats: FileStats,
    query: str,
    query_vector: npt.NDArray[np.float32] | None,
    *,
    top_k: int,
    score_threshold: float,
    params: SearchParams,
) -> Found:
    """The best ``top_k`` chunks for the query, as ``search.hybrid_search`` ranks them."""
    plan = plan_query(query, params)
    use_vectors = query_vector is not None and plan.vector
    dense: list[ChunkHit] = []
    if use_vectors:
        assert query_vector is not None
        dense = index.dense(query_vector, params.depth)
    # CJK runs are found by their bigrams, searched with the words (see cjk.py).
    terms = list(plan.words)
    grams = [gram_token(g) for g in plan.grams]
    chunks = index.count_chunks() if terms or grams else 0
    by_words, by_pairs, keyword_idf = keyword_parts(
        index, stats, terms, grams, params.depth, chunks
    )
    documents: list[tuple[str, int, float]] = []
    files: dict[str, FileRow] = {}  # file rows read so far
    if plan.whole_files:
        depth = params.depth
        documents = whole_file_hits(index, stats, files_stats, plan.grams, depth, chunks, files)
    keyword = [*by_words, *by_pairs]
    paths = {h.path for h in [*dense, *keyword]} | {p for p, _, _ in documents}
    files.update(index.file_rows(paths - files.keys()))
    current = {p: r.version for p, r in files.items() if r.record.status == "ok"}
    vector_hits = _current(dense, current)
    pair_hits = _current(by_pairs, current)
    if documents:  # the pairs' hits ranked by their files, as the embedded store does
        pair_hits = _by_documents(pair_hits, by_pairs, documents, files, params.depth)
    keyword_hits = summed(_current(by_words, current), pair_hits)
    cosine = dict(vector_hits)
    heads: dict[int, int] = {}
    head_cosine: dict[int, float] = {}
    if use_vectors:
        assert query_vector is not None
        if params.head_weight != 0:
            head_of = {p: r.head_id for p, r in files.items() if r.head_id >= 0}
            heads = {h.id: head_of[h.path] for h in [*dense, *keyword] if h.path in head_of}
            # A file the whole-file match found is shown by its first chunk if no passage.
            firsts = set(head_of.values())
            heads.update((cid, cid) for cid, _ in keyword_hits if cid in firsts)
        # Keyword candidates and heads get their cosine too: the threshold and the
        # fusion use it. One request fetches every vector still missing.
        missing = {cid for cid, _ in keyword_hits if cid not in cosine}
        missing |= {h for h in heads.values() if h not in cosine}
        found = _cosines(query_vector, index.vectors(sorted(missing)))
        cosine.update((cid, found[cid]) for cid, _ in keyword_hits if cid in found)
        head_cosine = {h: found[h] for h in heads.values() if h in found}
    identifier = plan.identifier
    # Passages of code are judged by meaning unless the query names an identifier.
    judged = params.judge_code and not identifier
    code: frozenset[int] = frozenset()
    if judged:  # by their file's suffix, else by their text (as catalog.chunks.code_chunks)
        path_of = {r.head_id: p for p, r in files.items()} | {h.id: h.path for h in keyword}
        scored = [cid for cid, _ in keyword_hits[:CODE_SAMPLE] if cid in cosine]  # as prose_share
        by_path = {cid for cid in scored if is_code(path_of.get(cid, ""))}
        told = [cid for cid in scored if may_read_as_code(path_of.get(cid, ""))]
        texts = index.texts(told) if told else {}
        code = frozenset(by_path | {cid for cid, text in texts.items() if reads_as_code(text)})
    ranking = fuse(
        Candidates(
            vector=vector_hits,
            keyword=keyword_hits,
            cosine=cosine,
            heads=heads,
            head_cosine=head_cosine,
            vector_ran=use_vectors,
            keyword_ran=plan.keyword,
            keyword_idf=keyword_idf,
            read_share=plan.read_share,
            code=code,
            identifier=identifier,
        ),
        params,
    )

    def fetch(ids: Sequence[int]) -> Mapping[int, StoredChunk]:
        return {
            int(r["id"]): stored_chunk(r, files[r["path"]].record)
            for r in index.chunk_rows(ids)
            if current.get(r["path"]) == int(r["version"])
        }

    return best_hits(fetch, ranking, top_k, score_threshold)


def _by_documents(
    passages: Sequence[tuple[int, float]],
    keyword: Sequence[ChunkHit],
    documents: Sequence[tuple[str, int, float]],
    files: Mapping[str, FileRow],
    depth: int,
) -> list[tuple[int, float]]:
    """The passage hits ranked by their files' whole-file match (``documents``): each
    current file's best row, the best ``depth`` files."""
    best: dict[str, float] = {}
    for path, version, score in documents:  # best first
        row = files.get(path)
        if row is not None and row.record.status == "ok" and row.version == version:
            best.setdefault(path, score)
    ranked = list(best.items())[:depth]
    head_of = {h.id: files[h.path].head_id for h in keyword if h.path in files}
    first_of = {p: files[p].head_id for p, _ in ranked if files[p].head_id >= 0}
    return by_documents(passages, ranked, head_of, first_of)


def _current(hits: Sequence[ChunkHit], current: Mapping[str, int]) -> list[tuple[int, float]]:
    """The hits whose chunk belongs to its file's current version, best first."""
    return [(h.id, h.score) for h in hits if current.get(h.path) == h.version]


def _cosines(
    query_vector: npt.NDArray[np.float32], vectors: Mapping[int, Sequence[float]]
) -> dict[int, float]:
    import numpy as np

    if not vectors:
        return {}
    ids = list(vectors)
    matrix = np.asarray([vectors[i] for i in ids], dtype=np.float32)
    return dict(zip(ids, (matrix @ query_vector).astype(float).tolist(), strict=True))
