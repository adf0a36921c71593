"""One gathering of candidates for every store: what it asks of a store's channels and
what it makes of the answers, pinned on a store made of dictionaries."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.gather import EMBED_NOW, Hits, KeywordHits, gather, search
from micro_rag_mcp.search.plan import QueryPlan, plan_query
from tests.cjkkit import DESCRIPTION


@dataclass
class DictChannels:
    """A store whose every answer is a dictionary; it records what it was asked."""

    words: Hits = field(default_factory=list)
    pairs: Hits = field(default_factory=list)
    idf: float = 3.0
    documents: Hits = field(default_factory=list)
    vector: Hits | None = None
    head_of: dict[int, int] = field(default_factory=dict)
    vectors: dict[int, float] = field(default_factory=dict)  # chunks that have one
    texts: dict[int, float] = field(default_factory=dict)  # cosines made when embedded
    code: frozenset[int] = frozenset()
    asked: list[tuple[str, list[int]]] = field(default_factory=list)

    def keyword_hits(self, plan: QueryPlan, params: SearchParams) -> KeywordHits:
        return KeywordHits(self.words, self.pairs, self.idf)

    def document_hits(self, plan: QueryPlan, depth: int) -> Hits:
        return self.documents[:depth]

    def vector_hits(self, depth: int) -> Hits | None:
        return None if self.vector is None else self.vector[:depth]

    def heads(self, ids: Sequence[int]) -> Mapping[int, int]:
        self.asked.append(("heads", sorted(ids)))
        return {cid: self.head_of.get(cid, cid) for cid in ids}

    def cosines(self, ids: Sequence[int]) -> Mapping[int, float]:
        self.asked.append(("cosines", sorted(ids)))
        return {cid: self.vectors[cid] for cid in ids if cid in self.vectors}

    def embedded(self, ids: Sequence[int]) -> Mapping[int, float]:
        self.asked.append(("embedded", list(ids)))
        return {cid: self.texts[cid] for cid in ids if cid in self.texts}

    def code_passages(self, ids: Sequence[int]) -> frozenset[int]:
        self.asked.append(("code", sorted(ids)))
        return self.code & set(ids)

    def fetch(self, ids: Sequence[int]) -> Mapping[int, StoredChunk]:
        return {cid: chunk(cid) for cid in ids}


def chunk(cid: int) -> StoredChunk:
    return StoredChunk(cid, f"f{cid}.txt", ".txt", 0, 0, 0, 1, 1, 1, None, f"text {cid}", 1)


PARAMS = SearchParams()
PLAN = plan_query("walrus herds", PARAMS)


def test_without_the_vector_channel_only_the_keyword_hits_are_asked() -> None:
    store = DictChannels(words=[(1, 5.0), (2, 3.0)])
    found = gather(PLAN, store, PARAMS)
    assert list(found.keyword) == [(1, 5.0), (2, 3.0)] and found.keyword_idf == 3.0
    assert not found.vector_ran and found.keyword_ran and not found.cosine
    assert store.asked == []  # no heads, cosines or code for a channel that did not run


def test_keyword_candidates_and_heads_get_their_cosines_in_one_request() -> None:
    store = DictChannels(
        words=[(1, 5.0), (2, 3.0)],
        vector=[(3, 0.9)],
        head_of={1: 10, 2: 3, 3: 3},
        vectors={1: 0.5, 2: 0.4, 10: 0.7},
    )
    found = gather(PLAN, store, PARAMS)
    assert store.asked[:2] == [("heads", [1, 2, 3]), ("cosines", [1, 2, 10])]
    assert dict(found.cosine) == {3: 0.9, 1: 0.5, 2: 0.4}
    assert dict(found.head_cosine) == {10: 0.7} and found.heads[1] == 10
    assert found.vector_ran and list(found.vector) == [(3, 0.9)]


def test_without_head_weight_no_heads_are_asked() -> None:
    store = DictChannels(words=[(1, 5.0)], vector=[(3, 0.9)], vectors={1: 0.5})
    found = gather(PLAN, store, SearchParams(head_weight=0.0))
    assert [kind for kind, _ in store.asked] == ["cosines", "embedded", "code"]
    assert not found.heads and not found.head_cosine


def test_the_best_keyword_candidates_without_a_vector_are_embedded_and_their_heads() -> None:
    words = [(cid, 100.0 - cid) for cid in range(1, 12)]  # none has a vector yet
    store = DictChannels(
        words=words,
        vector=[],
        head_of={1: 50, 2: 50, 3: 51},
        texts={cid: 0.3 for cid in range(1, 60)},
    )
    found = gather(PLAN, store, PARAMS)
    embedded = [ids for kind, ids in store.asked if kind == "embedded"]
    assert embedded[0] == list(range(1, EMBED_NOW + 1))
    assert embedded[1] == []  # the passages took the whole budget
    assert set(found.cosine) == set(range(1, EMBED_NOW + 1))


def test_heads_fill_what_is_left_of_the_embedding_budget() -> None:
    store = DictChannels(
        words=[(1, 5.0), (2, 4.0), (3, 3.0)],
        vector=[],
        head_of={1: 50, 2: 50, 3: 51},
        texts={1: 0.3, 2: 0.2, 3: 0.1, 50: 0.6, 51: 0.5},
    )
    found = gather(PLAN, store, PARAMS)
    assert ("embedded", [1, 2, 3]) in store.asked and ("embedded", [50, 51]) in store.asked
    assert dict(found.head_cosine) == {50: 0.6, 51: 0.5}


def test_code_is_judged_among_keyword_hits_with_a_vector_unless_an_identifier() -> None:
    store = DictChannels(
        words=[(1, 5.0), (2, 4.0)], vector=[(1, 0.8)], vectors={}, code=frozenset({1, 2})
    )
    found = gather(PLAN, store, PARAMS)
    assert ("code", [1]) in store.asked and found.code == frozenset({1})
    named = plan_query("parse_config", PARAMS)
    store.asked.clear()
    found = gather(named, store, PARAMS)
    assert found.identifier and found.code == frozenset()
    assert all(kind != "code" for kind, _ in store.asked)


def test_a_plan_that_names_an_identifier_says_so_on_either_channel() -> None:
    named = plan_query("parse_config", PARAMS)
    assert gather(named, DictChannels(words=[(1, 1.0)]), PARAMS).identifier
    assert not gather(PLAN, DictChannels(words=[(1, 1.0)]), PARAMS).identifier


def test_a_long_cjk_querys_pairs_are_ranked_by_their_whole_files() -> None:
    plan = plan_query(DESCRIPTION, PARAMS)
    assert plan.whole_files
    store = DictChannels(
        pairs=[(1, 9.0), (2, 8.0), (7, 1.0)],
        head_of={1: 1, 2: 20, 7: 70},
        documents=[(-1, 50.0), (20, 40.0), (30, 10.0)],  # a file without a first chunk
    )
    found = gather(plan, store, PARAMS)
    ranked = [cid for cid, _ in found.keyword]
    # File 20 by its best passage, file 30 by its first chunk, then the rest.
    assert ranked[:2] == [2, 30] and set(ranked[2:]) == {1, 7}


def test_words_without_pairs_keep_the_order_their_store_gave() -> None:
    store = DictChannels(words=[(5, 2.0), (3, 2.0)])
    assert [cid for cid, _ in gather(PLAN, store, PARAMS).keyword] == [5, 3]


def test_a_query_with_nothing_to_search_asks_no_keyword_hits() -> None:
    store = DictChannels(words=[(1, 5.0)])
    found = gather(plan_query("?!", PARAMS), store, PARAMS)
    assert not found.keyword_ran and not found.keyword


def test_search_reads_the_fused_best_rows() -> None:
    store = DictChannels(words=[(1, 5.0), (2, 3.0)], vector=[(2, 0.9), (3, 0.2)], vectors={1: 0.1})
    found = search(PLAN, store, PARAMS, top_k=2, score_threshold=0.0)
    assert [h.chunk.id for h in found.hits] == [2, 1]
    assert found.hits[0].channels == ("vector", "keyword")


PACKAGE = Path(__file__).resolve().parent.parent / "src" / "micro_rag_mcp"
# What a store may take of the ranking's modules: the parameters and the pairs a long
# CJK query searches whole files for. Every ranking step is gather's to call.
STORE_MAY_TAKE = {
    "micro_rag_mcp.search.fusion": {"SearchParams"},
    "micro_rag_mcp.search.documents": {"document_terms"},
    "micro_rag_mcp.search.duplicates": set(),
}


def ranking_imports(path: Path) -> Iterator[str]:
    """Each name ``path`` imports from a ranking module that a store may not take."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module in STORE_MAY_TAKE:
            allowed = STORE_MAY_TAKE[node.module]
            yield from (f"{node.module}.{a.name}" for a in node.names if a.name not in allowed)
        elif isinstance(node, ast.ImportFrom) and node.module == "micro_rag_mcp.search":
            ranking = {m.rsplit(".", 1)[1] for m in STORE_MAY_TAKE}
            yield from (f"micro_rag_mcp.search.{a.name}" for a in node.names if a.name in ranking)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in STORE_MAY_TAKE)


def test_the_stores_rank_only_through_gather() -> None:
    stores = [*PACKAGE.joinpath("local").rglob("*.py"), *PACKAGE.joinpath("milvus").rglob("*.py")]
    assert len(stores) > 20
    taken = {
        f"{path.relative_to(PACKAGE)}: {name}" for path in stores for name in ranking_imports(path)
    }
    assert taken == set()


def test_the_guard_sees_a_ranking_step_imported(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from micro_rag_mcp.search.fusion import SearchParams, fuse\n"
        "from micro_rag_mcp.search import documents\n"
        "import micro_rag_mcp.search.duplicates\n",
        encoding="utf-8",
    )
    assert set(ranking_imports(module)) == {
        "micro_rag_mcp.search.fusion.fuse",
        "micro_rag_mcp.search.documents",
        "micro_rag_mcp.search.duplicates",
    }
