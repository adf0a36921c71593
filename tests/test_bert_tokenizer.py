"""MiniLM's tokenizer in Python gives the ``tokenizers`` library's tokens, on prose of
many languages, odd characters, long words, and text of every Unicode block."""

from __future__ import annotations

import json
import random

import pytest

from micro_rag_mcp.model.bert_tokenizer import BertTokenizer
from micro_rag_mcp.model.files import MINILM_DIR, minilm_tokenizer_file
from micro_rag_mcp.model.loader import MAX_SEQ_LENGTH

tokenizers = pytest.importorskip("tokenizers")  # the test extra brings it; the install not

PROSE = [
    "Harbor cranes unload the cargo vessel at dawn.",
    "Die Bienen überwintern im Stock; Königinnen leben länger als Arbeiterinnen.",
    "¿Dónde está la estación? Ça coûte 12,50 € — naïve façade, Ærø, Øresund, Straße.",
    "東京の天気は晴れです。明日は雨が降るでしょう。",
    "合同纠纷案件中，原告请求被告支付货款人民币十万元。",
    "한국어 문장도 토큰으로 나뉩니다. 서울은 대한민국의 수도입니다.",
    "Ελληνικά: Η ΟΔΥΣΣΕΙΑ του Ομήρου. Русский текст: Москва — столица.",
    "עברית ועברית, العربية لغة جميلة, हिन्दी भाषा, ภาษาไทย, Tiếng Việt có dấu.",
    "İstanbul'da ıslak şemsiye; ǅemal; ﬁne ﬂour; Ⅻ; ½ cup; x² + y² = z².",
    "emoji 🐝🍯 and ZWJ 👩‍👩‍👧 and flags 🇩🇪 and keycaps 1️⃣ text",
    'code: def f(x): return x**2 # comment\n\tpath/to/file.py:42 {"a": [1, 2]}',
    "controls\x00\x01\x07 soft\u00adhyphen zero\u200bwidth bom\ufeff nbsp\u00a0thin\u2009end\u3000",
    "[CLS] special [SEP] tokens [MASK] kept [UNK] whole [PAD] but [cls] not",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " supercalifragilisticexpialidocious",
    "antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "   leading and trailing spaces   ",
    "",
    "U.S.A. e.g. i.e. «quoted» „Anführung“ ‘single’ …ellipsis… ‐‑‒–—―",
    "Ǆǅǆ ΐ ẞ ß ﬀ ŉ Å Å K K Ω Ω ̈ (a lone combining mark) é é",
]


@pytest.fixture(scope="module")
def both() -> tuple[BertTokenizer, object]:
    ours = BertTokenizer.from_files(
        minilm_tokenizer_file(), MINILM_DIR / "chars.json", MAX_SEQ_LENGTH
    )
    theirs = tokenizers.Tokenizer.from_file(str(minilm_tokenizer_file()))
    theirs.no_padding()
    theirs.enable_truncation(max_length=MAX_SEQ_LENGTH)
    return ours, theirs


def _same(both: tuple[BertTokenizer, object], texts: list[str]) -> None:
    ours, theirs = both
    expected = [encoding.ids for encoding in theirs.encode_batch(texts)]  # type: ignore[attr-defined]
    got = [encoding.ids for encoding in ours.encode_batch(texts)]
    for text, want, have in zip(texts, expected, got, strict=True):
        assert have == want, f"{text!r}"


def test_prose_of_many_languages_and_odd_characters(both: tuple[BertTokenizer, object]) -> None:
    _same(both, PROSE)


def test_long_texts_are_cut_at_the_same_token(both: tuple[BertTokenizer, object]) -> None:
    long = " ".join(PROSE) * 8
    _same(both, [long, "東京" * 400, "word, " * 300])
    assert len(both[0].encode(long).ids) == MAX_SEQ_LENGTH


def test_a_tokenizer_that_forgot_its_words_tokenizes_them_the_same(
    both: tuple[BertTokenizer, object],
) -> None:
    """An idle embedder drops its tokenizer's words; the next texts are looked up again."""
    ours = both[0]
    _same(both, PROSE)
    assert ours._pieces.cache_info().currsize > 0
    ours.forget()
    assert ours._pieces.cache_info().currsize == 0
    _same(both, PROSE[::-1])


def _one_by_one(both: tuple[BertTokenizer, object], points: list[int]) -> None:
    """Each code point after a letter, 64 words a text, so that each character's
    normalizing and splitting is compared, none cut off."""
    points = [p for p in points if not 0xD800 <= p < 0xE000]
    texts = [" ".join(f"x{chr(p)}" for p in points[i : i + 64]) for i in range(0, len(points), 64)]
    _same(both, texts)
    assert max(len(both[0].encode(text).ids) for text in texts) < MAX_SEQ_LENGTH


def test_every_character_the_tables_name(both: tuple[BertTokenizer, object]) -> None:
    raw = json.loads((MINILM_DIR / "chars.json").read_text(encoding="utf-8"))
    points = {int(point) for point in raw["mapped"]}
    for key in ("deleted", "spaced", "punctuation", "whitespace"):
        for first, last in raw[key]:
            points.update(range(first, last + 1) if last - first < 64 else (first, last))
    points.update(range(0xAC00, 0xD7A4, 97))  # Hangul syllables, a sample
    _one_by_one(both, sorted(points))


@pytest.mark.slow  # 1.5 CPU-seconds: every code point, where the fast lane takes the tables'
def test_every_character_up_to_u2ffff(both: tuple[BertTokenizer, object]) -> None:
    _one_by_one(both, list(range(0x30000)))


def test_random_mixtures_of_scripts(both: tuple[BertTokenizer, object]) -> None:
    rng = random.Random(38)
    alphabet = "".join(PROSE) + "".join(chr(p) for p in range(0x300, 0x370))
    texts = [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 300))) for _ in range(300)
    ]
    _same(both, texts)
