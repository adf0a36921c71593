"""The fusion: how the channels' candidates become one ranking, with vectors partial or whole."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from micro_rag_mcp.core.formats import is_code
from micro_rag_mcp.core.results import Hit
from micro_rag_mcp.core.settings import CODE_EXTS, DEFAULT_EXTS
from micro_rag_mcp.local.answers.search import hybrid_search
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.model.files import E5_SMALL, MINILM
from micro_rag_mcp.search.fusion import CODE_SAMPLE, Candidates, SearchParams, fuse, prose_share
from micro_rag_mcp.text.cjk import read_share
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings


def candidates(
    vector: Sequence[tuple[int, float]],
    keyword: Sequence[tuple[int, float]],
    *,
    cosine: dict[int, float] | None = None,
    heads: dict[int, int] | None = None,
    head_cosine: dict[int, float] | None = None,
) -> Candidates:
    return Candidates(
        vector=vector,
        keyword=keyword,
        cosine=dict(vector) if cosine is None else cosine,
        heads=heads or {},
        head_cosine=head_cosine or {},
        vector_ran=True,
        keyword_ran=True,
    )


@pytest.fixture
def indexed(engine: Engine, data: Path) -> Iterator[tuple[Engine, Catalog, VectorStore]]:
    """40 look-alike incident notes, each with its own error code and function name."""
    for i in range(40):
        (data / f"incident_{i:02d}.txt").write_text(
            f"Incident notes. The payment service logged error ERR-{1000 + i} after a deploy; "
            f"ticket INC{5550000 + i} was opened and the function parse_config_v{i} was fixed."
        )
    (data / "stanley-cups.txt").write_text("Maple Leafs, 1967. Canadiens, 1968.")
    engine.reindex()
    catalog = Catalog.open_reader(data / "index" / "catalog.sqlite3")
    store = VectorStore.load(data / "index" / "faiss.index", 64)
    yield engine, catalog, store
    catalog.close()


def search_with_vectors(
    catalog: Catalog,
    store: VectorStore,
    query: str,
    keep: set[int],
    *,
    embed_now: bool = False,
    **params: object,
) -> list[Hit]:
    """The hybrid search over an index in which only the ``keep`` chunks have a vector;
    ``embed_now``: the model embeds the best keyword candidates that have none."""
    partial = VectorStore.load(store.path, store.dimension)
    partial.remove([int(i) for i in store.ids() if int(i) not in keep])
    return hybrid_search(
        catalog,
        partial,
        query,
        FakeEmbedder().embed_query(query),
        top_k=5,
        score_threshold=0.2,
        params=SearchParams(**params),  # type: ignore[arg-type]
        embed=FakeEmbedder().embed_documents if embed_now else None,
    ).hits


def path_of_ids(catalog: Catalog, store: VectorStore) -> dict[int, str]:
    """The file of each saved vector, by the vector's key (the ids ``keep`` names)."""
    ids, keys = catalog.chunks.id_keys()
    rows = catalog.chunks.fetch(ids.tolist())
    saved = set(store.ids().tolist())
    paths = {int(k): rows[int(c)].path for c, k in zip(ids, keys, strict=True) if int(c) in rows}
    assert set(paths) == saved  # every chunk's vector is saved, and no other
    return paths


@pytest.mark.parametrize("share", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_an_identifier_ranks_its_file_first_at_every_share_of_vectors(
    indexed: tuple[Engine, Catalog, VectorStore], share: float
) -> None:
    _, catalog, store = indexed
    paths = path_of_ids(catalog, store)
    rnd = random.Random(3)
    keep = {cid for cid in paths if rnd.random() < share}
    for query in ("ERR-1017", "What does error ERR-1017 mean?", "parse_config_v17"):
        hits = search_with_vectors(catalog, store, query, keep)
        assert hits and hits[0].chunk.path == "incident_17.txt", (query, share)


def test_a_keyword_match_without_a_vector_is_not_buried_under_similar_passages(
    indexed: tuple[Engine, Catalog, VectorStore],
) -> None:
    _, catalog, store = indexed
    paths = path_of_ids(catalog, store)
    keep = {cid for cid, path in paths.items() if path != "stanley-cups.txt"}
    hits = search_with_vectors(catalog, store, "Maple Leafs payment service deploy", keep)
    assert hits[0].chunk.path == "stanley-cups.txt"
    assert hits[0].score is None  # no vector: no cosine is made up for it
    assert hits[0].channels == ("keyword",)
    assert all(h.score is not None and "vector" in h.channels for h in hits[1:])


def test_the_best_keyword_matches_without_a_vector_are_embedded_with_the_query(
    indexed: tuple[Engine, Catalog, VectorStore],
) -> None:
    _, catalog, store = indexed
    paths = path_of_ids(catalog, store)
    keep = {cid for cid, path in paths.items() if path != "stanley-cups.txt"}
    query = "Maple Leafs payment service deploy"
    at_rest = search_with_vectors(catalog, store, query, set(paths))
    hits = search_with_vectors(catalog, store, query, keep, embed_now=True)
    assert [h.chunk.path for h in hits] == [h.chunk.path for h in at_rest]
    assert hits[0].chunk.path == "stanley-cups.txt" and hits[0].channels == ("keyword",)
    assert hits[0].score == pytest.approx(at_rest[0].score)  # its cosine, as at rest


def test_a_passage_without_a_vector_is_judged_by_its_files_opening() -> None:
    # 3 and 4 match the words about equally and have no vector; 3's file opens on the topic
    # (its first chunk, 30, is close to the query), 4's file on something else.
    c = candidates(
        [(1, 0.5), (2, 0.45)],
        [(4, 5.2), (3, 5.0), (1, 1.0)],
        heads={3: 30, 4: 40},
        head_cosine={30: 0.6, 40: -0.2},
    )
    ranking = fuse(c, SearchParams())
    assert ranking.ranked.index(3) < ranking.ranked.index(4)
    assert 3 not in ranking.cosine and 4 not in ranking.cosine
    assert ranking.found_by[3] == ("keyword",)


def test_a_missing_vector_counts_as_a_typical_one_not_as_the_worst() -> None:
    # Passage 9 has no vector and no known file opening: it is placed like the keyword
    # candidates that have one, not below every passage found by meaning alone.
    c = candidates([(1, 0.50), (2, 0.48), (3, 0.47), (5, 0.30)], [(9, 8.0), (5, 7.0)])
    zero = fuse(c, SearchParams(head_weight=0.0)).fused
    # 5's vector score; the vector share (0.7) halved: one of the two keyword matches has one
    assert zero[9] == pytest.approx(0.35 * (0.30 + 1) / (0.50 + 1) + 0.65)
    assert zero[9] > zero[1]


def test_a_rare_exact_token_wins_whatever_its_cosine() -> None:
    # 9 alone holds the token (the keyword channel's only match) and is the least similar.
    vector = [(1, 0.62), (2, 0.60), (3, 0.58), (9, 0.10)]
    ranking = fuse(candidates(vector, [(9, 11.0)]), SearchParams())
    assert ranking.ranked[0] == 9


def test_a_keyword_channel_that_agrees_with_the_vector_channel_keeps_its_share() -> None:
    # Both channels rank the same five files best; the keyword channel is sure of 2.
    vector = [(1, 0.70), (2, 0.66), (3, 0.65), (4, 0.64), (5, 0.63), (6, 0.2)]
    keyword = [(2, 9.0), (1, 8.0), (3, 7.9), (4, 7.8), (5, 7.7)]
    assert fuse(candidates(vector, keyword), SearchParams()).ranked[0] == 2


def test_without_vectors_for_its_matches_the_keyword_channel_takes_the_ranking() -> None:
    # A first index with few vectors yet: none of the keyword matches has one.
    vector = [(1, 0.7), (2, 0.69), (3, 0.68)]
    keyword = [(10, 4.0), (11, 3.9), (12, 3.8)]
    fused = fuse(candidates(vector, keyword), SearchParams()).fused
    assert min(fused[i] for i in (10, 11, 12)) > max(fused[i] for i in (1, 2, 3))


def test_no_good_match_only_when_neither_words_nor_meaning_match(
    engine: Engine, data: Path
) -> None:
    for i in range(20):
        (data / f"note_{i:02d}.txt").write_text(
            f"Deploy notes. The payment service logged error ERR-{1000 + i} after a deploy."
        )
    engine.reindex()
    foreign = engine.search("ornithology migratory warbler plumage", 5, 0.0)
    assert foreign.hits and foreign.no_good_match
    japanese = engine.search("富士山の高さは何メートルですか", 5, 0.0)  # no CJK text here
    assert japanese.hits and japanese.no_good_match
    assert any(n.startswith("no good match") for n in foreign.notices)
    for query in ("ERR-1007", "payment service deploy error"):
        found = engine.search(query, 5, 0.0)
        assert found.hits and not found.no_good_match, query
        assert not any(n.startswith("no good match") for n in found.notices)


def test_a_query_in_cjk_is_ranked_by_its_words_and_a_mixed_one_keeps_some_vector_share() -> None:
    # The English-only encoder's cosines do not follow the meaning of CJK text: 1 is the
    # closest by cosine, 2 and 3 hold the query's words.
    vector = [(1, 0.85), (2, 0.02), (3, 0.0)]
    keyword = [(3, 6.0), (2, 5.5)]
    c = candidates(vector, keyword)
    assert fuse(c, SearchParams()).ranked[0] == 1  # an English query: the meaning leads
    cjk = replace(c, read_share=read_share("图书馆的古籍"))
    assert read_share("图书馆的古籍") == 0.0
    assert fuse(cjk, SearchParams()).ranked[:2] == [3, 2]
    mixed = read_share("富士山 Shinkansen")
    assert 0.7 < mixed < 0.8  # ten Latin letters of thirteen
    fused = fuse(replace(c, read_share=mixed), SearchParams()).fused
    assert fused[1] > 0  # the vector channel still speaks for a mixed query


def test_no_good_match_judges_a_query_the_encoder_cannot_read_by_its_words_alone() -> None:
    weak = candidates([(1, 0.1), (2, 0.05)], [(2, 0.5)])
    weak = replace(weak, keyword_idf=10.0)
    assert fuse(weak, SearchParams()).no_good_match
    # A query in CJK: the cosines cannot tell, the share of its pairs' weight found can.
    cjk = replace(weak, read_share=0.0)
    nothing = replace(cjk, keyword=[(2, 0.05)])  # 0.005 of its weight: not here
    assert fuse(nothing, SearchParams()).no_good_match
    # a passage of a long description holds a part of it: that is a match
    assert not fuse(replace(cjk, keyword=[(2, 0.3)]), SearchParams()).no_good_match
    close = replace(nothing, cosine={1: 0.9, 2: 0.8})  # high cosines say nothing in CJK
    assert fuse(close, SearchParams()).no_good_match
    assert not fuse(replace(cjk, keyword=[], keyword_ran=False), SearchParams()).no_good_match


def test_a_multilingual_encoders_bunched_cosines_keep_the_vector_channels_share() -> None:
    # e5's cosines: 1 is the closest in meaning, 3 holds the query's words. Shifted by 1,
    # the three vector scores differ by 2 %, and the keyword channel's 30 % decides.
    vector = [(1, 0.90), (2, 0.87), (3, 0.84)]
    keyword = [(3, 6.0), (2, 5.5)]
    c = candidates(vector, keyword)
    assert fuse(c, SearchParams()).ranked[0] == 3
    e5 = SearchParams(multilingual_encoder=True)
    assert fuse(c, e5).ranked[0] == 1
    fused = fuse(c, e5).fused
    assert fused[1] == pytest.approx(0.7) and fused[3] == pytest.approx(0.3)
    # spread, the scores tell the same whatever the scale: MiniLM-like cosines rank alike
    wide = candidates([(1, 0.60), (2, 0.45), (3, 0.30)], keyword)
    assert fuse(wide, e5).ranked == fuse(c, e5).ranked


def test_no_good_match_weighs_a_multilingual_encoders_cosines_on_their_own_scale() -> None:
    # multilingual-e5-small gives any two texts a cosine near 0.75: MiniLM's bound (0.40)
    # would pass every question; 0.81 tells a close passage from a far one.
    far = replace(candidates([(1, 0.78), (2, 0.76)], [(2, 0.5)]), keyword_idf=10.0)
    e5 = SearchParams(multilingual_encoder=True)
    assert not fuse(far, SearchParams()).no_good_match
    assert fuse(far, e5).no_good_match
    close = replace(far, cosine={1: 0.86, 2: 0.76})
    assert not fuse(close, e5).no_good_match
    # a query in CJK is read by meaning too: its cosines speak for it
    assert not fuse(replace(close, read_share=1.0, keyword=[(2, 0.05)]), e5).no_good_match


def test_a_query_in_cjk_that_no_word_matches_is_ranked_by_its_cosines() -> None:
    # A Chinese question over an English folder: the keyword channel finds nothing, and the
    # vector channel's order is all there is.
    c = replace(candidates([(9, 0.3), (5, 0.7), (1, 0.9)], []), read_share=0.0)
    assert fuse(c, SearchParams()).ranked == [1, 5, 9]


def test_plain_words_do_not_rank_code_but_an_identifier_does() -> None:
    # 1 and 2 are functions close in meaning; 7 and 8 merely say the query's common words.
    vector = [(1, 0.70), (2, 0.65), (7, 0.40), (8, 0.38)]
    keyword = [(8, 6.0), (7, 4.0), (2, 1.0)]
    c = replace(candidates(vector, keyword), code=frozenset({1, 2, 7, 8}))
    assert fuse(c, SearchParams()).ranked == [1, 2, 7, 8]  # the vector channel's order
    # The same candidates as prose, or a query naming an identifier: the words count.
    assert fuse(replace(c, code=frozenset()), SearchParams()).ranked[0] == 8
    assert fuse(replace(c, identifier=True), SearchParams()).ranked[0] == 8
    assert fuse(c, SearchParams(judge_code=False)).ranked[0] == 8


def test_code_keeps_its_keyword_say_for_a_query_in_cjk() -> None:
    # The encoder cannot read a Chinese query, so it cannot judge the code either.
    vector = [(1, 0.70), (2, 0.65), (7, 0.40), (8, 0.38)]
    keyword = [(8, 6.0), (7, 4.0), (2, 1.0)]
    c = replace(candidates(vector, keyword), code=frozenset({1, 2, 7, 8}), read_share=0.0)
    assert fuse(c, SearchParams()).ranked[:3] == [8, 7, 2]  # the keyword order


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("src/main.py", True),
        ("Main.PY", True),
        ("v1.2/notes.txt", False),
        ("v1.2/tool.rs", True),
        ("lib.py/README", False),
        ("docs/.py", False),  # a hidden file's name, not a suffix
        ("query.sql", True),
    ],
)
def test_a_file_is_code_by_its_suffix(path: str, code: bool) -> None:
    assert is_code(path) is code


def test_beside_prose_the_keyword_share_shrinks_with_the_share_of_code_it_matched() -> None:
    vector = [(1, 0.70), (2, 0.65), (7, 0.40), (8, 0.38)]
    keyword = [(8, 6.0), (7, 4.0), (2, 1.0)]  # 8 is prose, 7 and 2 are code
    c = replace(candidates(vector, keyword), code=frozenset({1, 2, 7}))
    fused = fuse(c, SearchParams(head_weight=0.0)).fused
    k = 0.3 * (1 / 3)  # the common keyword share, for the one match of three that is prose
    assert fused[8] == pytest.approx((1 - k) * 1.38 / 1.70 + k)
    assert fused[1] == pytest.approx(1 - k)  # one scale for every candidate


def test_how_much_is_code_is_told_by_the_best_keyword_matches() -> None:
    n = CODE_SAMPLE
    keyword = [(i, 100.0 - i) for i in range(2 * n)]
    c = candidates([(i, 0.5) for i in range(2 * n)], keyword)
    assert prose_share(replace(c, code=frozenset(range(n, 2 * n)))) == 1.0  # below the best
    assert prose_share(replace(c, code=frozenset(range(n // 2)))) == pytest.approx(0.5)
    assert prose_share(replace(c, code=frozenset(range(n // 2)), identifier=True)) == 1.0


def test_code_without_a_vector_yet_keeps_its_keyword_match() -> None:
    # While indexing: 9 has no vector, so nothing judges it by meaning but its words.
    c = candidates([(1, 0.70), (2, 0.65)], [(9, 6.0), (2, 1.0)])
    c = replace(c, code=frozenset({1, 2, 9}))
    ranking = fuse(c, SearchParams())
    assert ranking.ranked[0] == 9
    # Once it has one, its file of code is judged by meaning like the rest.
    whole = replace(c, cosine={**c.cosine, 9: 0.10})
    assert fuse(whole, SearchParams()).ranked == [1, 2, 9]


@pytest.mark.parametrize("suffix", [".py", ".txt"])  # code known by its suffix, or its text
def test_code_is_judged_by_meaning_unless_the_query_names_an_identifier(
    data: Path, request: pytest.FixtureRequest, suffix: str
) -> None:
    # Every function says "value" and "list"; the one the question means shares more of
    # its other words (the fake encoder's meaning is shared words).
    (data / "README.md").write_text("# Utilities\n\nSmall helpers.")
    for i in range(12):
        (data / f"util_{i:02d}{suffix}").write_text(
            f"def helper_{i}(value, items):\n"
            f"    # value list value list value list\n"
            f"    return [value for value in items if value != {i}]\n"
        )
    (data / f"sort_by_value{suffix}").write_text(
        "def sort_dict_by_value(mapping):\n"
        "    # sort a dict by value, largest first\n"
        "    return dict(sorted(mapping.items(), key=lambda kv: kv[1], reverse=True))\n"
    )
    exts = (*DEFAULT_EXTS, *CODE_EXTS) if suffix == ".py" else DEFAULT_EXTS
    engine = Engine(make_settings(data, exts=exts), FakeEmbedder)
    engine.load_model()
    request.addfinalizer(engine.stop)
    engine.reindex()
    catalog = Catalog.open_reader(data / "index" / "catalog.sqlite3")
    try:
        ids, _ = catalog.chunks.id_keys()
        rows = catalog.chunks.fetch(ids.tolist())
        code = catalog.chunks.code_chunks(ids.tolist())
        assert {rows[int(c)].path for c in code} == {p.name for p in data.glob(f"*{suffix}")}
        assert len(code) < len(ids)  # the Markdown note is not code
    finally:
        catalog.close()
    query = "sort a dict by value list"
    hybrid = [h.chunk.path for h in engine.search(query, 14, -1.0).hits]
    engine.params = SearchParams(channels=("vector",))
    by_meaning = [h.chunk.path for h in engine.search(query, 14, -1.0).hits]
    engine.params = SearchParams(channels=("keyword",))
    by_words = [h.chunk.path for h in engine.search(query, 14, -1.0).hits]
    engine.params = SearchParams()
    assert by_words[:3] != by_meaning[:3]  # the channels disagree
    assert hybrid == by_meaning  # and over code, the meaning ranks
    # An identifier is found by its exact name, wherever its meaning ranks it.
    assert engine.search("helper_7", 3, -1.0).hits[0].chunk.path == f"util_07{suffix}"


@pytest.mark.parametrize("multilingual", [True, False])
def test_the_engine_tells_the_fusion_whether_its_encoder_reads_every_language(
    data: Path, request: pytest.FixtureRequest, multilingual: bool
) -> None:
    model_id = (E5_SMALL if multilingual else MINILM).model_id
    engine = Engine(make_settings(data), lambda: FakeEmbedder(model_id=model_id))
    request.addfinalizer(engine.stop)
    engine.params = SearchParams(vector_share=0.6)
    engine.load_model()
    params = engine.search_params()
    assert params.multilingual_encoder is multilingual
    assert params.vector_share == 0.6  # the rest is the engine's own
