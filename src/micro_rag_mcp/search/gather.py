"""One query's candidates, gathered the same way on every store: the stores only answer.

A store gives its channels (``Channels``): the passages its keyword index and its vectors
find, the files a long CJK query matches whole, each passage's file's first chunk, the
cosines it holds, which passages are code, and the rows. ``gather`` turns a
``QueryPlan`` into ``Candidates`` from them, and ``search`` ranks those
(``fusion.fuse``) and reads the best rows (``fusion.best_hits``). What a search asks of a
store, in which order, and what it makes of the answers is written here once: the
embedded store and Milvus once each had their own copy, and the two had begun to drift.

The keyword channel runs before the vector channel is asked for its hits: the embedded
store runs the query's embedding and vector search in another thread meanwhile.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.core.results import Found
from micro_rag_mcp.search.documents import by_documents, summed
from micro_rag_mcp.search.fusion import CODE_SAMPLE, Candidates, SearchParams, best_hits, fuse
from micro_rag_mcp.search.plan import QueryPlan

# While vectors are being made, the best keyword candidates without one (and their files'
# first chunks) are embedded with the query, this many at most: they are then ranked as
# they will be once the index is complete, for a fraction of a second per search.
EMBED_NOW = 8

Hits = list[tuple[int, float]]


@dataclass(frozen=True, slots=True)
class KeywordHits:
    """The keyword channel's passages for a plan, best first, by its words' BM25 and by
    its CJK pairs' apart (a store searches them apart and the scores are added), and the
    summed idf of the words and pairs searched (``terms.idf_sum``)."""

    words: Hits
    pairs: Hits
    idf: float = 0.0


class Channels(Protocol):
    """What one store answers for one search (its scope, its snapshot, its query vector
    are the adapter's). Every chunk id given back is of a file's current version."""

    def keyword_hits(self, plan: QueryPlan, params: SearchParams) -> KeywordHits:
        """The best ``params.depth`` passages for the plan's words and pairs."""
        ...

    def document_hits(self, plan: QueryPlan, depth: int) -> Hits:
        """The files that best match the plan's pairs as whole texts, best first, each
        as (its first chunk's id, or -1 if it has none, its BM25); at most ``depth``."""
        ...

    def vector_hits(self, depth: int) -> Hits | None:
        """The best ``depth`` passages by cosine, best first; None: the channel did not
        run (no model, no vectors)."""
        ...

    def heads(self, ids: Sequence[int]) -> Mapping[int, int]:
        """For each given chunk id, the first chunk of its file (where known)."""
        ...

    def cosines(self, ids: Sequence[int]) -> Mapping[int, float]:
        """The query's cosine to each given chunk that has a vector."""
        ...

    def embedded(self, ids: Sequence[int]) -> Mapping[int, float]:
        """The query's cosine to each given chunk, its text embedded now (a store that
        holds every passage's vector with it: none)."""
        ...

    def code_passages(self, ids: Sequence[int]) -> frozenset[int]:
        """The given chunk ids that are code (``fusion.prose_share``)."""
        ...

    def fetch(self, ids: Sequence[int]) -> Mapping[int, StoredChunk]:
        """The rows of the given chunk ids that still exist."""
        ...


def search(
    plan: QueryPlan, channels: Channels, params: SearchParams, top_k: int, score_threshold: float
) -> Found:
    """The best ``top_k`` passages for the plan: gathered, fused, and read best first a
    window at a time until ``top_k`` pass the threshold (``fusion.best_hits``)."""
    ranking = fuse(gather(plan, channels, params), params)
    return best_hits(channels.fetch, ranking, top_k, score_threshold)


def keyword_evidence(
    plan: QueryPlan, channels: Channels, params: SearchParams
) -> tuple[Hits, float]:
    """The keyword channel's passages for the plan, best first, and the summed idf of
    what it searched. A long CJK query's pair hits are ranked by their files' match of the
    whole query (``documents.by_documents``)."""
    if not plan.keyword:
        return [], 0.0
    found = channels.keyword_hits(plan, params)
    pairs = found.pairs
    if plan.whole_files:
        documents = channels.document_hits(plan, params.depth)
        if documents:
            head_of = channels.heads([cid for cid, _ in pairs])
            first_of = {head: head for head, _ in documents if head >= 0}
            pairs = by_documents(pairs, documents, head_of, first_of)
    # Without pairs the words' hits stand in the order their store gave them.
    return (summed(found.words, pairs) if plan.grams else found.words), found.idf


def gather(plan: QueryPlan, channels: Channels, params: SearchParams) -> Candidates:
    """What both channels propose for the plan, with every cosine the fusion needs: each
    keyword candidate's and its file's first chunk's (``head_weight``), made now for the
    best few that have no vector yet (``EMBED_NOW``); and which keyword candidates are
    code, unless the query names an identifier."""
    keyword, keyword_idf = keyword_evidence(plan, channels, params)
    vector = channels.vector_hits(params.depth) if plan.vector else None
    cosine = dict(vector or [])
    heads: Mapping[int, int] = {}
    head_cosine: dict[int, float] = {}
    code: frozenset[int] = frozenset()
    if vector is not None:
        if params.head_weight != 0:
            # Every candidate's: a passage without a vector is judged by its file's.
            heads = channels.heads(list(cosine.keys() | {cid for cid, _ in keyword}))
        # Keyword candidates get their cosine too (the threshold and the fusion use it),
        # and the heads theirs: one request for every vector still missing.
        missing = dict.fromkeys(cid for cid, _ in keyword if cid not in cosine)
        missing.update(dict.fromkeys(h for h in heads.values() if h not in cosine))
        found = channels.cosines(list(missing))
        cosine.update((cid, found[cid]) for cid, _ in keyword if cid in found)
        head_cosine = {h: found[h] for h in heads.values() if h in found}
        best = [cid for cid, _ in keyword if cid not in cosine][:EMBED_NOW]
        cosine.update(channels.embedded(best))
        if params.head_weight != 0:
            known = cosine.keys() | head_cosine.keys()
            lacking = dict.fromkeys(h for c in best if (h := heads.get(c, c)) not in known)
            head_cosine.update(channels.embedded(list(lacking)[: EMBED_NOW - len(best)]))
        if params.judge_code and not plan.identifier:
            # As prose_share counts them: the best keyword matches that have a vector.
            judged = [cid for cid, _ in keyword[:CODE_SAMPLE] if cid in cosine]
            code = channels.code_passages(judged) if judged else frozenset()
    return Candidates(
        vector=vector or [],
        keyword=keyword,
        cosine=cosine,
        heads=heads,
        head_cosine=head_cosine,
        vector_ran=vector is not None,
        keyword_ran=plan.keyword,
        keyword_idf=keyword_idf,
        read_share=plan.read_share,
        code=code,
        identifier=plan.identifier,
    )
