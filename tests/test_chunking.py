"""chunk_text invariants and break-point preferences; Locator line and page mapping."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from micro_rag_mcp.text.chunking import Chunk, Locator, chunk_text

WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed")


def prose(n_chars: int, seed: int = 7) -> str:
    """Sentences of random words with occasional paragraph breaks."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < n_chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 18)))
        part = sentence.capitalize() + (". " if rng.random() > 0.1 else ".\n\n")
        parts.append(part)
        total += len(part)
    return "".join(parts)


def assert_invariants(text: str, chunks: list[Chunk], size: int, overlap: int) -> None:
    """Everything chunk_text promises, checked against the source."""
    covered = bytearray(len(text))
    for i, c in enumerate(chunks):
        assert c.index == i
        assert c.text == text[c.start : c.end]
        assert 0 < c.end - c.start <= size
        assert not c.text[0].isspace() and not c.text[-1].isspace()
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert a.start < b.start and a.end < b.end  # progress, no duplicate chunks
        assert a.end - b.start <= size // 2  # overlap never above half a chunk
    missed = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert missed == []


# --------------------------------------------------------------------------- invariants


def test_chunks_are_exact_slices_within_size() -> None:
    text = prose(20_000)
    chunks = chunk_text(text, 500, 100)
    assert len(chunks) > 40
    assert_invariants(text, chunks, 500, 100)


def test_consecutive_chunks_overlap_by_about_the_requested_amount() -> None:
    text = prose(20_000)
    chunks = chunk_text(text, 400, 80)
    overlaps = [a.end - b.start for a, b in zip(chunks, chunks[1:], strict=False)]
    assert all(40 <= o <= 120 for o in overlaps), overlaps
    assert text[chunks[1].start : chunks[0].end] in chunks[0].text


def test_next_chunk_starts_at_a_word_boundary() -> None:
    text = prose(20_000)
    for c in chunk_text(text, 300, 90)[1:]:
        assert text[c.start - 1].isspace(), text[c.start - 5 : c.start + 5]


def test_zero_overlap_gives_disjoint_chunks() -> None:
    text = prose(5_000)
    chunks = chunk_text(text, 300, 0)
    assert all(a.end <= b.start for a, b in zip(chunks, chunks[1:], strict=False))
    assert_invariants(text, chunks, 300, 0)


def test_overlap_is_capped_at_half_the_size() -> None:
    text = prose(5_000)
    chunks = chunk_text(text, 100, 90)
    assert max(a.end - b.start for a, b in zip(chunks, chunks[1:], strict=False)) <= 50


def test_short_text_is_one_trimmed_chunk() -> None:
    assert chunk_text("  \n hello world \n\n", 100, 20) == [Chunk(0, 4, 15, "hello world")]


@pytest.mark.parametrize("text", ["", " ", "\n\n\t  \u3000\n"])
def test_empty_or_whitespace_only_text_gives_no_chunks(text: str) -> None:
    assert chunk_text(text, 10, 2) == []


def test_whitespace_gap_is_not_chunked_and_not_repeated() -> None:
    text = "first words" + " " * 5_000 + "last words"
    chunks = chunk_text(text, 100, 30)
    assert [c.text for c in chunks] == ["first words", "last words"]


def test_chunk_before_a_long_gap_is_not_emitted_twice() -> None:
    text = "word " * 40 + " " * 5_000 + "last words"
    chunks = chunk_text(text, 100, 30)
    assert chunks[-1].text == "last words"
    assert_invariants(text, chunks, 100, 30)


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (-5, 0), (10, 10), (10, 11), (10, -1)])
def test_bad_parameters_raise_value_error(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_text("some text", size, overlap)


# --------------------------------------------------------------------------- break points


def test_paragraph_break_is_preferred_over_later_line_break() -> None:
    first = "One sentence here. Another sentence follows. " * 4 + "End of paragraph one."
    text = first + "\n\n" + "Short line.\nSecond paragraph goes on. " * 10
    chunks = chunk_text(text, len(first) + 40, 10)
    assert chunks[0].text == first


def test_line_break_is_preferred_over_sentence_end() -> None:
    line = "A line with. Sentence ends. Inside it and more words"
    text = line + "\n" + "next line goes on and on. " * 10
    assert chunk_text(text, len(line) + 30, 0)[0].text == line


def test_sentence_end_is_preferred_over_plain_space() -> None:
    text = "word " * 30 + "The end. " + "tail " * 30
    chunk = chunk_text(text, 170, 0)[0]
    assert chunk.text.endswith("The end.")


def test_cjk_full_stop_is_a_sentence_end() -> None:
    text = "漢字" * 40 + "。" + "かな" * 40
    assert chunk_text(text, 120, 0)[0].text == "漢字" * 40 + "。"


def test_space_is_preferred_over_a_hard_cut() -> None:
    text = " ".join(["abcdefghij"] * 20)
    for c in chunk_text(text, 35, 0):
        assert c.text.split(" ") == ["abcdefghij"] * len(c.text.split(" "))


def test_text_without_whitespace_is_cut_hard_at_size() -> None:
    text = "x" * 1_000
    chunks = chunk_text(text, 100, 20)
    assert [c.end - c.start for c in chunks[:-1]] == [100] * (len(chunks) - 1)
    assert_invariants(text, chunks, 100, 20)


# --------------------------------------------------------------------------- properties

_WORDS_AND_GAPS = st.lists(
    st.tuples(st.text(alphabet="ab.。", min_size=1, max_size=20), st.integers(1, 90)),
    max_size=30,
).map(lambda parts: "".join(word + " " * gap for word, gap in parts))

_ALPHABETS = st.one_of(
    st.text(),  # arbitrary unicode
    _WORDS_AND_GAPS,  # long whitespace runs between words
    st.text(alphabet="ab .!?\n\t\u3000。"),  # break-point heavy
    st.text(alphabet="xyz"),  # no whitespace at all
    st.text(alphabet=" \n\t\r\x0b\x0c\u2028"),  # only whitespace
)


@settings(max_examples=200, deadline=None)
@given(text=_ALPHABETS, size=st.integers(1, 60), data=st.data())
def test_invariants_hold_for_any_text(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    assert_invariants(text, chunk_text(text, size, overlap), size, overlap)


# --------------------------------------------------------------------------- size


@pytest.mark.parametrize(
    "make",
    [lambda: prose(5_000_000), lambda: "x" * 5_000_000, lambda: ("a" + " " * 700) * 7_000],
    ids=["prose", "no-whitespace", "sparse"],
)
def test_five_megabytes_are_chunked_whole(make: Callable[[], str]) -> None:
    # How fast is bench.readers' business; here, that nothing is lost or out of bounds.
    text = make()
    assert_invariants(text, chunk_text(text, 1000, 200), 1000, 200)


# --------------------------------------------------------------------------- Locator


def test_locator_lines_on_a_small_example() -> None:
    text = "one\ntwo\nthree\n\nfive"
    locate = Locator(text)
    assert locate.lines(0, 3) == (1, 1)
    assert locate.lines(4, 8) == (2, 2)  # "two\n": the newline ends line 2
    assert locate.lines(text.index("three"), len(text)) == (3, 5)
    assert locate.lines(0, len(text)) == (1, 5)


@given(text=st.text(alphabet="ab\n"), data=st.data())
def test_locator_lines_match_counting_newlines(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    expected_last = text.count("\n", 0, max(start, end - 1)) + 1
    assert Locator(text).lines(start, end) == (text.count("\n", 0, start) + 1, expected_last)


def test_locator_page_without_pages_is_none() -> None:
    assert Locator("no pages here").page(3) is None


def test_locator_page_uses_page_starts() -> None:
    locate = Locator("x" * 30, page_starts=(0, 10, 20))
    assert [locate.page(i) for i in (0, 9, 10, 19, 20, 29)] == [1, 1, 2, 2, 3, 3]
