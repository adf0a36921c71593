"""A heading belongs to its section: a section starts a passage, and its heading path is
searched with every passage under it, by words and by meaning; in both stores."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from micro_rag_mcp.ingest.files import extract_chunks, section_starts
from micro_rag_mcp.ingest.readers import read_document
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.milvus.engine import MilvusEngine
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.text.vector_text import embedding_text
from tests.fakes import FakeEmbedder
from tests.milvuskit import MilvusServer, store_engine
from tests.passagekit import FIX_4471, write_notes, write_runbook
from tests.settingskit import make_settings

# The fake embedder's vectors say nothing of meaning: the words decide.
KEYWORD = SearchParams(channels=("keyword",))
SECTION = "Operations runbook › ERR-4471: quarter failure"


@pytest.fixture
def runbook(data: Path) -> Path:
    write_runbook(data)
    write_notes(data)
    return data


def local_engine(data: Path) -> Engine:
    engine = Engine(make_settings(data), FakeEmbedder)
    engine.load_model()
    return engine


def check_heading_finds_its_section(engine: Engine | MilvusEngine) -> None:
    top = engine.search("ERR-4471", 5, -1.0).hits[0].chunk
    assert (top.path, top.section) == ("runbook.md", SECTION)  # before: ERR-4470's tail
    assert top.text.startswith("## ERR-4471")  # the heading opens its section's passage
    # The section's later passage, which never names the code, is found by its heading.
    hits = engine.search("ERR-4471", 20, -1.0).hits
    fixes = [h.chunk for h in hits if FIX_4471 in h.chunk.text]
    assert fixes and "ERR-4471" not in fixes[0].text


def test_an_error_code_heading_finds_its_own_section_first(runbook: Path) -> None:
    engine = local_engine(runbook)
    engine.params = KEYWORD
    try:
        engine.reindex()
        check_heading_finds_its_section(engine)
    finally:
        engine.stop()


@pytest.mark.slow
def test_an_error_code_heading_finds_its_section_first_in_a_milvus_store(
    runbook: Path, milvus: MilvusServer
) -> None:
    engine = store_engine(runbook, milvus.config())
    engine.params = KEYWORD
    try:
        engine.reindex()
        check_heading_finds_its_section(engine)
    finally:
        engine.stop()


@pytest.mark.slow
def test_an_error_code_finds_its_section_first_in_the_hybrid_with_the_real_model(
    runbook: Path,
) -> None:
    from micro_rag_mcp.model.embedder import load_embedder

    engine = Engine(make_settings(runbook), load_embedder)
    engine.load_model()
    try:
        engine.reindex()
        # The encoder makes little of a code: before the code leaned on the keyword
        # channel, ERR-4473's and ERR-4470's sections came first.
        for query in ("ERR-4471", "how to fix ERR-4471", "What is the fix for ERR-4471?"):
            top = engine.search(query, 5, -1.0).hits[0]
            assert top.chunk.section == SECTION, query
            assert "vector" in top.channels and "keyword" in top.channels, query
    finally:
        engine.stop()


def test_a_passage_is_indexed_and_embedded_under_its_heading_path(runbook: Path) -> None:
    path = runbook / "runbook.md"
    _, chunks = extract_chunks(read_document(path, max_bytes=1 << 20), path, make_settings(runbook))
    fixes = [c for c in chunks if FIX_4471 in c.text]
    assert fixes and all("ERR-4471" not in c.text for c in fixes)
    heading = f"runbook › {SECTION}"
    assert fixes[0].title == heading
    assert embedding_text(fixes[0].title, fixes[0].text).startswith(f"{heading}\n")
    engine = local_engine(runbook)
    try:
        engine.reindex()
    finally:
        engine.stop()
    db = sqlite3.connect(runbook / "index" / "catalog.sqlite3")
    found = db.execute(
        "SELECT c.text FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid"
        " WHERE chunks_fts MATCH 'title:4471'"
    ).fetchall()
    db.close()
    assert any(FIX_4471 in text for (text,) in found)  # the keyword channel's title column


def test_no_passage_spans_the_start_of_a_section(runbook: Path) -> None:
    path = runbook / "runbook.md"
    doc = read_document(path, max_bytes=1 << 20)
    _, chunks = extract_chunks(doc, path, make_settings(runbook))
    starts = {offset for offset, label in doc.sections if "ERR-" in label}
    assert len(starts) == 7
    assert starts <= {c.char_start for c in chunks}
    assert not any(c.char_start < s < c.char_end for c in chunks for s in starts)


def test_a_heading_with_little_or_no_text_under_it_stays_with_what_follows() -> None:
    sections = [(0, "Guide"), (8, "Guide › Setup"), (600, "Guide › Use"), (650, "Guide › Tips")]
    assert section_starts(sections, 250) == [600]  # "Tips" only 50 chars after "Use"


def test_an_index_made_before_headings_joined_their_passages_is_chunked_again(
    runbook: Path,
) -> None:
    engine = local_engine(runbook)
    try:
        engine.reindex()
    finally:
        engine.stop()
    db = sqlite3.connect(runbook / "index" / "catalog.sqlite3")
    with db:  # as a release before left it (chunking titles:2)
        db.execute(
            "UPDATE meta SET value = replace(value, 'titles:3', 'titles:2') WHERE key = 'chunking'"
        )
    db.close()
    engine = local_engine(runbook)
    try:
        assert engine.reindex().files_updated == 25  # every file read and chunked again
        assert engine.reindex().files_unchanged == 25
    finally:
        engine.stop()


def test_a_pdf_s_outline_names_its_passages_sections_but_does_not_join_their_text(
    tmp_path: Path,
) -> None:
    import io

    from pypdf import PdfReader, PdfWriter

    from tests.docfactory import pdf_bytes

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(["Cover.", "Revenue rose."]))))
    writer.add_outline_item(title="Item 2. Management's Discussion", page_number=1)
    path = tmp_path / "filing.pdf"
    with path.open("wb") as out:
        writer.write(out)
    _, chunks = extract_chunks(
        read_document(path, max_bytes=1 << 20), path, make_settings(tmp_path)
    )
    assert [c.section for c in chunks] == [None, "Item 2. Management's Discussion"]
    assert {c.title for c in chunks} == {"filing"}
