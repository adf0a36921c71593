"""Reading an indexed file back: the stitched chunks are the extracted text, offsets and all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from micro_rag_mcp.core.errors import InvalidArgument, NotIndexed
from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.ingest.readers import read_document
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.search.reading import stitch, window
from micro_rag_mcp.text.chunking import Locator, chunk_text
from tests.docfactory import Heading, Table, make_docx, make_pdf

# -- the pure core: chunks of a text, stitched ------------------------------------------


def stored(text: str, size: int, overlap: int) -> list[StoredChunk]:
    locate = Locator(text)
    return [
        StoredChunk(
            i,
            "f.txt",
            ".txt",
            0,
            i,
            c.start,
            c.end,
            *locate.lines(c.start, c.end),
            None,
            c.text,
            len(text),
        )
        for i, c in enumerate(chunk_text(text, size, overlap))
    ]


def around(chunks: list[StoredChunk], start: int, stop: int) -> list[StoredChunk]:
    """What the catalog hands over: the chunks overlapping the range and a neighbour each side."""
    before = [c.chunk_index for c in chunks if c.char_end <= start]
    after = [c.chunk_index for c in chunks if c.char_start >= stop]
    low, high = (before[-1] if before else 0), (after[0] if after else len(chunks))
    return [c for c in chunks if low <= c.chunk_index <= high]


texts = st.text(alphabet=st.sampled_from("ab c\n\t.é"), min_size=1, max_size=400).filter(
    lambda t: t.strip() != ""
)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(60, 120), st.integers(0, 60), st.data())
def test_stitched_chunks_are_the_text_up_to_unstored_whitespace(
    text: str, size: int, overlap: int, data: st.DataObject
) -> None:
    chunks = stored(text, size, min(overlap, size // 2))
    total = chunks[-1].char_end
    start = data.draw(st.integers(0, total - 1))
    stop = data.draw(st.integers(start + 1, total))
    got, unknown, lines = stitch(around(chunks, start, stop), start, stop)
    want = text[start:stop]
    assert len(got) == len(want)
    inside = {i for a, b in unknown for i in range(a - start, b - start)}
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if i in inside:
            assert w.isspace() and g.isspace(), (i, w, g)
        else:
            assert g == w, (i, w, g)
    whole, _, _ = stitch(chunks, 0, total)
    assert whole.count("\n") == text[:total].count("\n")  # breaks are counted, if not placed
    if not inside & {0, stop - start - 1}:
        assert lines == Locator(text).lines(start, stop)


@settings(max_examples=100, deadline=None)
@given(texts, st.integers(1, 90))
def test_reading_on_from_next_char_start_gives_the_whole_text(text: str, max_chars: int) -> None:
    chunks = stored(text, 80, 20)
    total = chunks[-1].char_end
    whole, _, _ = stitch(chunks, 0, total)
    pieces, start = [], 0
    while start < total:
        start, stop, end = window("f.txt", total, {}, start, None, None, max_chars)
        pieces.append(stitch(around(chunks, start, stop), start, stop)[0])
        assert end == total and stop - start <= max_chars
        start = stop
    assert "".join(pieces) == whole


# -- through the engine, on files read by the real readers ------------------------------


def extracted(path: Path) -> str:
    return read_document(path, max_bytes=1 << 30).text


def test_read_returns_exactly_the_extracted_text_of_each_format(engine: Engine, data: Path) -> None:
    pages = ["First page. " * 150, "", "Third page, after a blank one. " * 60, "The end."]
    make_pdf(data / "report.pdf", pages)
    make_docx(
        data / "handbook.docx",
        [Heading("Travel"), "Trains are paid within thirty days. " * 40, Table([["a", "b"]])],
    )
    (data / "notes.md").write_text(
        "# Notes\n\n" + "\n".join(f"Line {i} of the notes." for i in range(300))
    )
    engine.reindex()
    for name in ("report.pdf", "handbook.docx", "notes.md"):
        passage = engine.read(name, max_chars=50_000)
        assert passage.text == extracted(data / name).rstrip(), name
        assert passage.total_chars == len(passage.text) and passage.next_char_start is None
        assert passage.notices == []


def test_a_pdf_page_and_a_text_range_carry_the_locators_search_gives(
    engine: Engine, data: Path
) -> None:
    make_pdf(data / "report.pdf", ["Alpha page. " * 100, "", "Gamma page, the third.", "Omega."])
    lines = [f"Line {i}." for i in range(1, 201)]
    (data / "notes.txt").write_text("\n".join(lines) + "\n")
    engine.reindex()
    text = extracted(data / "report.pdf")

    third = engine.read("report.pdf", page=3)
    assert third.text == "Gamma page, the third." and third.page == 3
    assert text[third.char_start : third.char_end] == third.text and third.next_char_start is None
    assert third.line_start is None

    part = engine.read("notes.txt", char_start=9, max_chars=20)  # "Line 2." begins at 9
    assert part.text == "\n".join(lines)[9:29] and part.next_char_start == 29
    assert (part.line_start, part.line_end) == (2, 4) and part.page is None
    rest = engine.read("notes.txt", char_start=part.next_char_start, char_end=40)
    assert rest.char_end == 40 and rest.next_char_start is None

    page_one = engine.read("report.pdf", page=1, max_chars=500)
    assert page_one.next_char_start == 500
    on = engine.read("report.pdf", page=1, char_start=500, max_chars=5000)
    assert page_one.text + on.text == text[: on.char_end] and on.next_char_start is None


@pytest.mark.parametrize(
    ("path", "kw", "error", "message"),
    [
        ("../secret.txt", {}, NotIndexed, 'path "../secret.txt" is outside the data folder'),
        ("/etc/passwd", {}, NotIndexed, 'path "/etc/passwd" is outside the data folder'),
        ("gone/x.md", {}, NotIndexed, 'no file "gone/x.md" in the index; paths are relative'),
        (
            "NOTES.txt",
            {},
            NotIndexed,
            'no file "NOTES.txt" in the index; did you mean "notes.txt"?',
        ),
        ("broken.pdf", {}, NotIndexed, '"broken.pdf" is in the folder but could not be indexed: '),
        (
            "tool.py",
            {},
            NotIndexed,
            'no file "tool.py" in the index: .py files are not indexed here; include them '
            "with --exts (e.g. --exts docs,code) and reindex",
        ),
        ("setup.exe", {}, NotIndexed, ".exe files are not a type the index reads"),
        ("notes.txt", {"page": 1}, InvalidArgument, "page applies to PDF files only"),
        ("report.pdf", {"page": 2}, InvalidArgument, "page 2 of report.pdf has no text"),
        ("report.pdf", {"page": 7}, InvalidArgument, "page must be at most 3, the last page"),
        ("notes.txt", {"char_start": 999}, InvalidArgument, "char_start must be less than 11"),
        (
            "notes.txt",
            {"char_start": 5, "char_end": 5},
            InvalidArgument,
            "char_end must be greater",
        ),
        ("report.pdf", {"page": 1, "char_start": 40}, InvalidArgument, "within page 1"),
        ("notes.txt", {"max_chars": 0}, InvalidArgument, "max_chars must be between 1 and 50000"),
    ],
)
def test_what_is_not_in_the_index_is_refused_in_one_sentence(
    engine: Engine, data: Path, path: str, kw: dict[str, int], error: type[Exception], message: str
) -> None:
    make_pdf(data / "report.pdf", ["One.", "", "Three."])
    (data / "notes.txt").write_text("Some notes.")
    (data / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    (data / "tool.py").write_text("print('a script, not a document')\n")
    engine.reindex()
    with pytest.raises(error) as caught:
        engine.read(path, **kw)  # type: ignore[arg-type]
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_an_absolute_path_inside_the_folder_is_read(engine: Engine, data: Path) -> None:
    (data / "sub").mkdir()
    (data / "sub" / "a.txt").write_text("Inside.")
    engine.reindex()
    assert engine.read(str(data / "sub" / "a.txt")).path == "sub/a.txt"
    assert engine.read("./sub/../sub/a.txt").text == "Inside."


def test_a_file_changed_since_indexing_is_read_as_indexed_and_says_so(
    engine: Engine, data: Path
) -> None:
    (data / "a.txt").write_text("The old text.")
    engine.reindex()
    (data / "a.txt").write_text("The new text, longer.")
    os.utime(data / "a.txt", ns=(1, 1))
    passage = engine.read("a.txt")
    assert passage.text == "The old text."
    assert passage.notices == [
        "a.txt has changed since it was indexed; this is its text as "
        "indexed (reindex to read the new one)"
    ]


def test_reading_before_any_index_says_nothing_is_indexed(engine: Engine, data: Path) -> None:
    with pytest.raises(NotIndexed, match="nothing is indexed yet"):
        engine.read("a.txt")
    assert not (data / "index").exists()
