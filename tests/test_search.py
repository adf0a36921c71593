"""Keyword-query sanitizing, rank fusion and hybrid ranking."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from micro_rag_mcp.local.answers.keywords import or_query
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.search.fusion import SearchParams, convex
from micro_rag_mcp.search.terms import (
    MAX_SEARCHED_TERMS,
    STOPWORDS,
    held_weight,
    idf_sum,
    names_identifier,
    query_terms,
    query_weight,
    searched_terms,
)
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings

HOSTILE = [
    '"unbalanced quote',
    "NEAR(a b",
    "a AND OR NOT b",
    "prefix* -minus +plus",
    "col:value ^start",
    "emoji 🚀🔥 only",
    "🚀🔥",
    "()[]{}<>!@#$%^&*",
    "x" * 10_000,
    " ".join(f"word{i}" for i in range(5000)),
    "\x00\x01 control",
    "ünïcödé 日本語の文章 Ελληνικά",
]


def fts_query(text: str, stopwords: frozenset[str] = frozenset()) -> str | None:
    """The FTS5 expression the keyword channel runs for ``text``, or None (no word)."""
    terms = query_terms(text, stopwords=stopwords)
    return or_query(terms) if terms else None


@pytest.mark.parametrize("query", HOSTILE)
def test_any_query_string_is_a_valid_fts5_expression(tmp_path: Path, query: str) -> None:
    cat = Catalog.open(tmp_path / "c.sqlite3")
    expr = fts_query(query)
    if expr is not None:
        cat.keywords.keyword_search(expr, 10)  # raises sqlite3.OperationalError on bad syntax
    cat.close()


def test_fts_query_quotes_every_term_and_drops_operators() -> None:
    assert (
        fts_query('NEAR(alpha "beta" AND gamma*')
        == '"near" OR "alpha" OR "beta" OR "and" OR "gamma"'
    )
    assert fts_query("🚀 ... !!!") is None


def test_fts_query_can_leave_out_stop_words_but_never_every_word() -> None:
    expr = fts_query("What is the effect of aspirin?", stopwords=STOPWORDS)
    assert expr == '"what" OR "effect" OR "aspirin"'
    assert fts_query("to be or not to be", stopwords=STOPWORDS) == '"to" OR "be" OR "or" OR "not"'
    assert fts_query("the effect", stopwords=frozenset()) == '"the" OR "effect"'  # the default


def test_search_drops_stop_words_by_default_and_still_answers_them(
    engine: Engine, data: Path
) -> None:
    assert SearchParams().drop_stopwords
    (data / "a.txt").write_text("The theory of the thing.")
    (data / "b.txt").write_text("Aspirin lowers fever.")
    engine.reindex()
    kw = Engine(engine.settings, FakeEmbedder, SearchParams(channels=("keyword",)))
    kw.load_model()
    assert [h.chunk.path for h in kw.search("the aspirin", 5, -1.0).hits] == ["b.txt"]
    assert [h.chunk.path for h in kw.search("of the", 5, -1.0).hits] == ["a.txt"]


def test_a_long_query_keeps_its_words_and_searches_the_rarest(tmp_path: Path) -> None:
    text = " ".join(f"w{i}" for i in range(500))
    expr = fts_query(text)
    assert expr is not None and expr.count(" OR ") == 499  # no word of a paragraph dropped
    shares = {f"w{i}": (0.01 if i >= 400 else 0.2) for i in range(500)}
    searched = searched_terms(query_terms(text), shares)
    assert len(searched) == MAX_SEARCHED_TERMS
    assert {f"w{i}" for i in range(400, 500)} <= set(searched)  # the rarest, not the first


def test_search_finds_the_file_containing_a_phrase(engine: Engine, data: Path) -> None:
    (data / "zeppelin.txt").write_text("The airship Hindenburg burned at Lakehurst in 1937.")
    (data / "fruit.md").write_text("Apples and pears grow in orchards.")
    (data / "code.txt").write_text("def main(): return 0")
    engine.reindex()
    hits = engine.search("Hindenburg Lakehurst", top_k=3, score_threshold=0.0).hits
    assert hits[0].chunk.path == "zeppelin.txt"
    assert set(hits[0].channels) == {"vector", "keyword"}
    assert hits[0].score is not None and 0.0 < hits[0].score <= 1.0001


def test_score_threshold_cuts_low_cosine_hits_the_keyword_channel_did_not_find(
    engine: Engine, data: Path
) -> None:
    (data / "a.txt").write_text("alpha beta gamma")
    (data / "b.txt").write_text("delta epsilon zeta")
    engine.reindex()
    hits = engine.search("epsilon zeta delta theta", top_k=5, score_threshold=0.0).hits
    assert [h.chunk.path for h in hits] == ["b.txt", "a.txt"]  # a.txt: by vector only
    assert hits[1].channels == ("vector",) and hits[1].score is not None
    cut = engine.search("epsilon zeta delta theta", top_k=5, score_threshold=0.99).hits
    assert [h.chunk.path for h in cut] == ["b.txt"]  # kept by its words, whatever its cosine
    assert cut[0].score is not None and cut[0].score < 0.99 and "keyword" in cut[0].channels


def test_a_threshold_that_cuts_every_passage_says_so(engine: Engine, data: Path) -> None:
    (data / "a.txt").write_text("alpha beta gamma")
    engine.reindex()
    outcome = engine.search("omega", top_k=5, score_threshold=0.99)
    assert outcome.hits == [] and not outcome.no_good_match
    assert any("cosine of at least 0.99" in n for n in outcome.notices)
    assert not any("cosine of at least" in n for n in engine.search("omega", 5, 0.0).notices)
    # Nothing found for another reason (no keyword match, no vector channel): no advice.
    engine.params = SearchParams(channels=("keyword",))
    unfound = engine.search("omega", top_k=5, score_threshold=0.99)
    assert unfound.hits == [] and not any("cosine of at least" in n for n in unfound.notices)


def test_results_carry_citation_positions(engine: Engine, data: Path) -> None:
    text = "first line\nsecond line\n\nthird paragraph about comets\n"
    (data / "c.txt").write_text(text)
    engine.reindex()
    hit = engine.search("comets", top_k=1, score_threshold=0.0).hits[0].chunk
    assert text[hit.char_start : hit.char_end] == hit.text
    assert (hit.line_start, hit.line_end) == (1, 4)
    assert hit.ext == ".txt" and hit.page is None


def test_search_sees_a_file_whole_before_or_after_its_change(engine: Engine, data: Path) -> None:
    (data / "a.txt").write_text("old words " * 300)
    engine.reindex()
    conn = sqlite3.connect(data / "index" / "catalog.sqlite3")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DELETE FROM chunks WHERE chunk_index = 0")  # half of a change, uncommitted
    hits = engine.search("old words", top_k=50, score_threshold=0.0).hits
    conn.execute("ROLLBACK")
    conn.close()
    assert 0 in {h.chunk.chunk_index for h in hits}


def test_convex_fusion_keeps_a_rare_keyword_match_ahead_of_merely_similar_chunks() -> None:
    vector = {1: 0.60, 2: 0.58, 3: 0.40}  # 3 is only a little less similar than the rest
    keyword = {3: 12.0, 1: 2.0}  # but it alone holds the rare term: far ahead by BM25
    fused = convex(vector, keyword, vector_share=0.7)
    assert max(fused, key=lambda c: fused[c]) == 3
    assert all(0.0 <= v <= 1.0 for v in fused.values())


def test_convex_fusion_a_channel_that_finds_nothing_changes_no_order() -> None:
    vector = {1: 0.2, 2: 0.9, 3: -0.3}
    fused = convex(vector, {}, vector_share=0.7)
    assert sorted(fused, key=lambda c: -fused[c]) == [2, 1, 3]
    keyword = {4: 3.0, 5: 6.0}
    only_keyword = convex({}, keyword, vector_share=0.7, channels=1)
    assert only_keyword == {4: 0.5, 5: 1.0}  # the one channel that ran gets the whole weight


def test_an_exact_identifier_ranks_its_file_first_at_the_default_threshold(
    engine: Engine, data: Path
) -> None:
    for i in range(40):
        (data / f"incident_{i:02d}.txt").write_text(
            f"Incident notes. The payment service logged error ERR-{1000 + i} after a deploy; "
            f"ticket INC{5550000 + i} was opened and the function parse_config_v{i} was fixed."
        )
    engine.reindex()
    for query in ("ERR-1017", "What does error ERR-1017 mean?", "parse_config_v17"):
        hits = engine.search(query, top_k=3, score_threshold=0.2).hits
        assert hits and hits[0].chunk.path == "incident_17.txt", query


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("sort a dict by value", False),
        ("parse_config", True),
        ("why did _clean_str fail", True),
        ("HttpClient timeout", True),
        ("writeBoolean", True),
        ("os.path join", True),
        ("e.g. sort a list", False),  # one letter a side is no dotted name
        ("python2 dict default", False),
        ("ERR-8971", False),
        ("3.14 rounding", False),
        ("what does __init__ do", True),
        ("self.x", True),
        ("数据_处理", False),  # CJK text joined by an underscore
        ("U.S. sales", False),
    ],
)
def test_a_query_names_an_identifier_by_its_shape(query: str, names: bool) -> None:
    assert names_identifier(query) is names


def test_a_word_no_passage_holds_counts_in_the_query_s_weight_only_when_it_outweighs() -> None:
    shares = {"walrus": 0.05, "tusk": 0.05, "ivory": 0.05, "zyzzogeton": 0.0, "quux": 0.0}
    held = idf_sum(["walrus", "tusk", "ivory"], shares, 20)
    unheld = idf_sum(["zyzzogeton", "quux"], shares, 20)
    assert 0 < unheld < held  # a question with two words the folder lacks: its held ones
    asked = ["walrus", "tusk", "ivory", "zyzzogeton", "quux"]
    assert held_weight(asked, shares, 20) == pytest.approx(held)
    # another field's question: mostly words no passage holds, all of them weigh
    foreign = ["walrus", "zyzzogeton", "quux"]
    assert held_weight(foreign, shares, 20) == pytest.approx(idf_sum(foreign, shares, 20))
    assert query_weight([(1.0, True), (1.0, False)]) == 1.0  # a tie: the held alone
    assert query_weight([(1.0, True), (1.5, False)]) == 2.5


def test_a_question_with_words_the_folder_lacks_is_still_a_good_match(data: Path) -> None:
    # A wide fake embedder: few words share a dimension, and the cosines stay low (under
    # WEAK_COSINE): the words decide.
    engine = Engine(make_settings(data), lambda: FakeEmbedder(dimension=1024))
    engine.load_model()
    animals = ["walrus tusk ivory", "heron marsh reed", "beetle dung larva", "trout gill fin"]
    for i in range(20):
        words = animals[i % 4].split()
        filler = " ".join(f"log{i}x{j}" for j in range(40))
        (data / f"field_{i:02d}.txt").write_text(f"Field notes {words[i // 4 % 3]}. {filler}")
    filler = " ".join(f"w{j}" for j in range(40))
    (data / "walrus.txt").write_text(f"The walrus tusk is ivory, under blubber. {filler}")
    try:
        engine.reindex()
        # Two words no passage holds (a typo, another spelling) beside four it does: they
        # weighed about half the query, and it was flagged.
        found = engine.search("walrus tusk ivory blubber zyzzogeton quuxbar", 5, 0.0)
        assert found.hits[0].chunk.path == "walrus.txt" and not found.no_good_match
        # Another field's question: its words the folder lacks outweigh the one it holds.
        foreign = engine.search("ornithology plumage walrus", 5, 0.0)
        assert foreign.hits and foreign.no_good_match
    finally:
        engine.stop()
