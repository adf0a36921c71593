"""A query is analysed once, into the plan both stores search by."""

from __future__ import annotations

from dataclasses import replace

from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.plan import plan_query
from tests.cjkkit import DESCRIPTION

PARAGRAPH = (
    "We study how walrus herds move along the coast each season and which routes the "
    "herds take when the sea ice breaks up early in spring, whether herds of walrus "
    "return to the same haul-out beaches, and how counts of walrus from aerial surveys "
    "compare with counts from the ground."
)


def test_a_plan_holds_each_word_once_stop_words_too() -> None:
    plan = plan_query("the walrus and the parse_config of it", SearchParams())
    assert plan.words == ("the", "walrus", "and", "parse_config", "of", "it")
    assert plan.identifier and plan.keyword and plan.vector
    assert plan.read_share == 1.0 and not plan.grams and not plan.whole_files


def test_a_paragraph_searches_each_of_its_words_once() -> None:
    # Counting a paragraph's repeats helped only the collection it was chosen on (CISI):
    # removed by the evidence rule (docs/benchmarks.md, "Levers on evidence").
    words = plan_query(PARAGRAPH, SearchParams()).words
    assert words.count("walrus") == 1 and words.count("herds") == 1
    assert len(words) == len(set(words))


def test_a_long_cjk_query_is_planned_against_whole_files_unless_the_lever_is_off() -> None:
    plan = plan_query(DESCRIPTION, SearchParams())
    assert plan.whole_files and plan.grams and plan.read_share == 0.0
    assert not any("\u4e00" <= ch <= "\u9fff" for w in plan.words for ch in w)
    passages = plan_query(DESCRIPTION, SearchParams(whole_files=False))
    assert not passages.whole_files and passages.grams == plan.grams
    assert passages.words  # its runs are searched as words again


def test_a_channel_switched_off_is_not_planned() -> None:
    vector_only = plan_query("walrus herds", replace(SearchParams(), channels=("vector",)))
    assert not vector_only.keyword and not vector_only.words and vector_only.vector
    assert not plan_query("walrus", SearchParams(channels=("keyword",))).vector
