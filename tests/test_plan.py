"""A query is analysed once, into the plan both stores search by."""

from __future__ import annotations

from dataclasses import replace

import pytest

from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.plan import plan_query
from micro_rag_mcp.search.terms import code_share
from tests.cjkkit import DESCRIPTION

PARAGRAPH = (
    "We study how walrus herds move along the coast each season and which routes the "
    "herds take when the sea ice breaks up early in spring, whether herds of walrus "
    "return to the same haul-out beaches, and how counts of walrus from aerial surveys "
    "compare with counts from the ground."
)


def test_a_plan_holds_the_words_searched_without_stop_words() -> None:
    plan = plan_query("the walrus and the parse_config of it", SearchParams())
    assert plan.words == ("walrus", "parse_config")
    assert plan.identifier and plan.keyword and plan.vector
    assert plan.read_share == 1.0 and not plan.grams and not plan.whole_files


def test_a_paragraph_searches_each_of_its_words_once() -> None:
    # Counting a paragraph's repeats helped only the collection it was chosen on (CISI):
    # removed by the evidence rule (docs/benchmarks.md, "Levers on evidence").
    words = plan_query(PARAGRAPH, SearchParams()).words
    assert words.count("walrus") == 1 and words.count("herds") == 1
    assert len(words) == len(set(words)) and "the" not in words


def test_a_long_cjk_query_is_planned_against_whole_files_unless_the_lever_is_off() -> None:
    plan = plan_query(DESCRIPTION, SearchParams())
    assert plan.whole_files and plan.grams and plan.read_share == 0.0
    passages = plan_query(DESCRIPTION, SearchParams(whole_files=False))
    assert not passages.whole_files and passages.grams == plan.grams


def test_a_short_cjk_run_is_searched_as_a_word_a_clause_by_its_pairs() -> None:
    # A run of CJK characters is one word to the index: a short one is a name or a title
    # a question quotes whole; a clause is searched by its pairs alone.
    plan = plan_query("「デスマスク」の著者は誰なの?", SearchParams())
    assert "デスマスク" in plan.words and plan.grams
    assert "の著者は誰なの" in plan.words  # seven characters
    clause = plan_query("秋に産卵するタナゴ類とは本種の他に何がありますか", SearchParams())
    assert clause.grams and clause.keyword and not clause.words
    assert plan_query("Tokyo 東京都庁", SearchParams()).words == ("tokyo", "東京都庁")
    assert not plan_query(DESCRIPTION, SearchParams()).words  # a long query: pairs alone


def test_a_channel_switched_off_is_not_planned() -> None:
    vector_only = plan_query("walrus herds", replace(SearchParams(), channels=("vector",)))
    assert not vector_only.keyword and not vector_only.words and vector_only.vector
    assert not plan_query("walrus", SearchParams(channels=("keyword",))).vector


@pytest.mark.parametrize(
    ("query", "share"),
    [
        ("ERR-4471", 1.0),
        ("INC0012345", 1.0),
        ("4.2.1", 1.0),
        ("the CVE-2021-44228", 1.0),  # a stop word beside it is no word of the query
        ("mach 2.5 flow", 0.0),
        ("COVID-19 cases in 1998", 0.0),  # two digits; a year alone
        ("section 4.2", 0.0),
        ("parse_config", 0.0),
    ],
)
def test_a_code_is_told_by_its_shape(query: str, share: float) -> None:
    assert code_share(query) == share


def test_a_code_is_searched_by_its_words_and_a_question_naming_one_leans_on_them() -> None:
    assert plan_query("ERR-4471", SearchParams()).read_share == 0.0
    named = plan_query("how to fix ERR-4471", SearchParams()).read_share
    assert 0.0 < named < 0.25  # (1 - 7/13) squared
    assert plan_query("how to fix a failed restore", SearchParams()).read_share == 1.0
    assert plan_query("ERR-4471", SearchParams()).words == ("err", "4471")


def test_a_multilingual_encoder_reads_a_query_in_cjk_whole() -> None:
    assert plan_query("富士山の高さは", SearchParams()).read_share == 0.0
    plan = plan_query("富士山の高さは", SearchParams(multilingual_encoder=True))
    assert plan.read_share == 1.0 and plan.grams  # its pairs are still searched as words


def test_a_long_cjk_query_is_left_to_its_pairs_even_with_a_multilingual_encoder() -> None:
    case = "被告人张某于二零一九年三月在某市某区盗窃他人财物价值人民币五千元后被公安机关抓获归案"
    plan = plan_query(case, SearchParams(multilingual_encoder=True))
    assert plan.whole_files  # a case description: matched against whole files
    assert plan.read_share == 0.0  # LeCaRD: its vectors' share cost 3.2 points
