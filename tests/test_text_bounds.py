"""Output in proportion to input: files that reuse one part are refused with the bound.

Each hostile file is small and names one part many times; before the bound it yielded
hundreds of times its size in text. The reader process reports its own peak memory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.isolation import (
    READER_MEMORY_MAX_BYTES,
    READER_MEMORY_MIN_BYTES,
    IsolatedReader,
    reader_memory_bytes,
)
from micro_rag_mcp.ingest.readers import read_document
from micro_rag_mcp.ingest.readers.guards import MAX_TEXT_CHARS, TEXT_FLOOR_CHARS, text_bound
from micro_rag_mcp.local.engine import Engine
from tests.fakes import FakeEmbedder
from tests.hostilefactory import (
    make_repeated_spine_epub,
    make_shared_stream_pdf,
    make_shared_string_xlsx,
)
from tests.settingskit import make_settings

MIB = 1024 * 1024
# A reader process that has read a small document peaks near 100 MB (interpreter and
# parsers); the unbounded reads of these files peaked at 0.5-3.4 GB.
READER_PEAK_BOUND = 400 * MIB


def refusal(reader: IsolatedReader, path: Path) -> str:
    with pytest.raises(ReadError) as info:
        reader.read(path, max_bytes=100 * MIB)
    return str(info.value)


def test_an_epub_whose_spine_repeats_one_chapter_is_refused_at_its_bound(
    tmp_path: Path,
) -> None:
    book = make_repeated_spine_epub(tmp_path / "echo.epub", repeats=2000, chapter_chars=50_000)
    assert book.stat().st_size < 10_000  # 100 M characters before the bound
    with IsolatedReader(tmp_path, timeout_s=600) as reader:
        reason = refusal(reader, book)
        assert reader.peak_memory_bytes < READER_PEAK_BOUND
    assert reason == (
        f"refused: extracted text exceeds {TEXT_FLOOR_CHARS:,} characters, over 20× the file's size"
    )


def test_an_xlsx_whose_cells_share_one_string_is_refused_at_its_bound(tmp_path: Path) -> None:
    book = make_shared_string_xlsx(
        tmp_path / "echo.xlsx", rows=400, columns=50, string_chars=10_000
    )
    limit = 50 * book.stat().st_size
    with IsolatedReader(tmp_path, timeout_s=600) as reader:
        reason = refusal(reader, book)
        assert reader.peak_memory_bytes < READER_PEAK_BOUND
    assert (
        reason == f"refused: extracted text exceeds {limit:,} characters, over 50× the file's size"
    )


def test_a_pdf_whose_pages_share_one_content_stream_is_refused_at_its_bound(
    tmp_path: Path,
) -> None:
    pdf = make_shared_stream_pdf(tmp_path / "echo.pdf", pages=400, lines=150)
    with IsolatedReader(tmp_path, timeout_s=600) as reader:
        reason = refusal(reader, pdf)
        assert reader.peak_memory_bytes < READER_PEAK_BOUND
    assert reason.startswith("refused: extracted text exceeds ")
    assert reason.endswith("over 20× the file's size")


def test_a_refused_file_is_recorded_with_the_bound_and_leaves_no_chunks(data: Path) -> None:
    make_repeated_spine_epub(data / "echo.epub", repeats=200, chapter_chars=20_000)
    (data / "fine.txt").write_text("an ordinary note about herons")
    engine = Engine(make_settings(data), FakeEmbedder)
    engine.load_model()
    report = engine.reindex()
    assert [path for path, _ in report.files_failed] == ["echo.epub"]
    assert report.files_failed[0][1].startswith("refused: extracted text exceeds")
    assert report.chunks_total == 1


def test_a_book_within_its_bound_is_read_whole(tmp_path: Path) -> None:
    book = make_repeated_spine_epub(tmp_path / "short.epub", repeats=10, chapter_chars=50_000)
    text = read_document(book, max_bytes=100 * MIB).text
    assert len(text) > 10 * 49_000
    assert text.count("alpaca") > 10 * 600


def test_the_bound_grows_with_the_file_up_to_the_absolute_cap() -> None:
    assert text_bound(10, ".epub").limit == TEXT_FLOOR_CHARS
    assert text_bound(1 * MIB, ".pdf").limit == 20 * MIB
    assert text_bound(1 * MIB, ".txt").limit == 2 * MIB
    huge = text_bound(100 * MIB, ".xlsx")
    assert huge.limit == MAX_TEXT_CHARS
    assert (
        huge.reason == f"refused: extracted text exceeds the limit of {MAX_TEXT_CHARS:,} characters"
    )


def test_the_reader_process_runs_under_its_share_of_memory(tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_text("herons")
    ceiling = reader_memory_bytes()
    assert READER_MEMORY_MIN_BYTES <= ceiling <= READER_MEMORY_MAX_BYTES
    with IsolatedReader(tmp_path, timeout_s=60) as reader:
        assert reader.read(note, max_bytes=MIB).text == "herons"
        assert reader._proc is not None
        limits = Path(f"/proc/{reader._proc.pid}/limits").read_text()
    line = next(x for x in limits.splitlines() if x.startswith("Max address space"))
    assert line.split()[3:5] == [str(ceiling), str(ceiling)]
    assert 0 < reader.peak_memory_bytes < READER_PEAK_BOUND
