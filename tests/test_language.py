"""How much of a text is not English: the signal ``--model auto`` chooses the encoder by."""

from __future__ import annotations

import pytest

from micro_rag_mcp.text.language import CJK_WEIGHT, ENGLISH_WORDS, OTHER_WORDS, foreign_share

ENGLISH = (
    "The committee met on Tuesday to review the budget, which had been cut by a third. "
    "Members asked whether the cuts were fair to the smaller teams et al."
)
GERMAN = (
    "Der Ausschuss traf sich am Dienstag, um den Haushalt zu prüfen, der um ein Drittel "
    "gekürzt worden war. Die Mitglieder fragten, ob die Kürzungen für die kleineren Teams "
    "gerecht seien."
)
GERMAN_ASCII = "Die Stadt liegt an der Elbe und ist nicht weit von der Grenze entfernt."
JAPANESE = "委員会は火曜日に予算を審議した。予算は三分の一削減されていた。"
CODE = "def total(items):\n    # the sum of the prices, for the cart\n    return sum(items)\n"


@pytest.mark.parametrize("text", [ENGLISH, CODE, "", "1234 5678", "café naïve résumé " + ENGLISH])
def test_english_and_code_are_not_foreign(text: str) -> None:
    assert foreign_share(text) < 0.1


@pytest.mark.parametrize("text", [GERMAN, GERMAN_ASCII, JAPANESE, "Москва — столица России."])
def test_other_languages_are_foreign(text: str) -> None:
    assert foreign_share(text) > 0.9


def test_german_without_any_umlaut_is_told_by_its_function_words() -> None:
    assert GERMAN_ASCII.isascii()
    assert foreign_share(GERMAN_ASCII) == 1.0


def test_a_cjk_character_weighs_as_several_letters() -> None:
    text = "東京都庁新宿区西新宿 the office is there"  # 10 kanji, 16 English letters
    kanji, letters = 10, 16
    assert foreign_share(text) == pytest.approx(kanji * CJK_WEIGHT / (kanji * CJK_WEIGHT + letters))
    assert foreign_share(text) > kanji / (kanji + letters)


def test_a_mixed_text_is_foreign_in_proportion() -> None:
    share = foreign_share(ENGLISH + " " + GERMAN)
    assert 0.3 < share < 0.8


def test_no_function_word_is_claimed_by_both_sides() -> None:
    assert not ENGLISH_WORDS & OTHER_WORDS
    assert {"et", "al", "in", "die", "was", "plus"}.isdisjoint(OTHER_WORDS)
