"""Incremental reindex, the catalog and the vector invariant, with the fake embedder."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from micro_rag_mcp.core.errors import InvalidArgument, ModelUnavailable
from micro_rag_mcp.core.results import Progress
from micro_rag_mcp.ingest.files import document_title
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.layout import IndexPaths, open_for_writing
from micro_rag_mcp.local.passes.indexer import sync_files
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.model.handle import vector_space
from micro_rag_mcp.text.vector_text import embedding_text
from tests.fakes import FakeEmbedder
from tests.indexkit import catalog_rows, chunk_ids, chunk_keys, vector_ids, write
from tests.settingskit import make_settings


def test_first_reindex_adds_every_file_and_gives_every_chunk_a_vector(
    engine: Engine, data: Path
) -> None:
    write(data / "a.txt", "Apples grow on trees in the orchard.")
    write(data / "notes" / "b.md", "# Bananas\n\nBananas are yellow and curved.")
    report = engine.reindex()
    assert (report.files_added, report.files_updated, report.files_removed) == (2, 0, 0)
    assert report.chunks_total == 2
    assert set(catalog_rows(data / "index")) == {"a.txt", "notes/b.md"}
    assert vector_ids(data / "index") == chunk_keys(data / "index")


def test_progress_names_each_file_as_its_read_begins(engine: Engine, data: Path) -> None:
    write(data / "a.txt", "Apples grow on trees in the orchard.")
    write(data / "b.txt", "Bananas are yellow and curved.")
    heard: list[Progress] = []
    engine.reindex(progress=heard.append)
    reading = dict.fromkeys((p.reading, p.done) for p in heard if p.reading)
    assert sorted(name for name, _ in reading) == ["a.txt", "b.txt"]  # each once
    assert sorted(done for _, done in reading) == [0, 1]  # the files done before it


def test_reindex_skips_unchanged_files_without_reading_them(engine: Engine, data: Path) -> None:
    write(data / "a.txt", "Apples grow on trees.", mtime=1e6)
    engine.reindex()
    (data / "a.txt").chmod(0o000)  # unreadable: a read would fail
    try:
        report = engine.reindex()
    finally:
        (data / "a.txt").chmod(0o644)
    assert report.files_unchanged == 1 and report.files_failed == []


def test_touched_file_with_same_text_keeps_its_chunks(engine: Engine, data: Path) -> None:
    write(data / "a.txt", "Apples grow on trees.", mtime=1_000_000)
    engine.reindex()
    before = chunk_ids(data / "index")
    write(data / "a.txt", "Apples grow on trees.", mtime=2_000_000)
    report = engine.reindex()
    assert report.files_updated == 0 and report.files_unchanged == 1
    assert chunk_ids(data / "index") == before
    cat = Catalog.open(data / "index" / "catalog.sqlite3")
    assert cat.files()["a.txt"].mtime_ns == 2_000_000 * 10**9
    cat.close()


def test_modified_file_replaces_its_chunks_and_vectors(engine: Engine, data: Path) -> None:
    write(data / "a.txt", "Apples grow on trees.", mtime=1_000_000)
    engine.reindex()
    old = chunk_ids(data / "index")
    write(data / "a.txt", "Cherries are small and red.", mtime=2_000_000)
    report = engine.reindex()
    assert report.files_updated == 1
    assert catalog_rows(data / "index") == {"a.txt": ["Cherries are small and red."]}
    assert chunk_ids(data / "index").isdisjoint(old)
    assert vector_ids(data / "index") == chunk_keys(data / "index")


def test_deleted_file_leaves_catalog_vectors_and_results(engine: Engine, data: Path) -> None:
    write(data / "a.txt", "Apples grow on trees.")
    write(data / "b.txt", "Bananas are yellow.")
    engine.reindex()
    (data / "a.txt").unlink()
    report = engine.reindex()
    assert report.files_removed == 1
    assert set(catalog_rows(data / "index")) == {"b.txt"}
    assert vector_ids(data / "index") == chunk_keys(data / "index")
    hits = engine.search("apples trees", top_k=5, score_threshold=0.0).hits
    assert all(h.chunk.path != "a.txt" for h in hits)


def test_path_glob_limits_reading_and_removal_to_its_scope(engine: Engine, data: Path) -> None:
    write(data / "reports" / "2024" / "q1.md", "Revenue rose in the first quarter.", mtime=1e6)
    write(data / "notes" / "n.txt", "Meeting notes about hiring.", mtime=1e6)
    engine.reindex()
    write(data / "reports" / "2024" / "q1.md", "Revenue fell in the first quarter.", mtime=2e6)
    write(data / "notes" / "n.txt", "Meeting notes about firing.", mtime=2e6)
    (data / "notes" / "n.txt").rename(data / "notes" / "moved.txt")
    report = engine.reindex(path_glob="reports/**/*.md")
    assert (report.files_updated, report.files_added, report.files_removed) == (1, 0, 0)
    rows = catalog_rows(data / "index")
    assert rows["reports/2024/q1.md"] == ["Revenue fell in the first quarter."]
    assert rows["notes/n.txt"] == ["Meeting notes about hiring."]  # out of scope: untouched
    assert "notes/moved.txt" not in rows


@pytest.mark.parametrize("pattern", ["../*", "/etc/*", "**/../../*", "~/x", "", "./.."])
def test_path_glob_that_could_leave_the_folder_is_refused(engine: Engine, pattern: str) -> None:
    with pytest.raises(InvalidArgument):
        engine.reindex(path_glob=pattern)


def test_a_stamp_taken_right_after_a_write_is_checked_again_by_content(
    engine: Engine, data: Path
) -> None:
    path = write(data / "a.txt", "Version one of the text.")
    stamp = path.stat().st_mtime_ns
    engine.reindex()
    path.write_text("Version two of the text.")  # same size; may share the mtime tick
    os.utime(path, ns=(stamp, stamp))  # the worst case: exactly the same stamp
    report = engine.reindex()
    assert report.files_updated == 1
    assert catalog_rows(data / "index") == {"a.txt": ["Version two of the text."]}


def test_force_re_reads_everything_in_scope_and_embeds_only_text_without_a_vector(
    data: Path,
) -> None:
    embedder = FakeEmbedder()
    eng = Engine(make_settings(data), lambda: embedder)
    eng.load_model()
    write(data / "a.txt", "Apples.")
    write(data / "b.txt", "Bananas.")
    eng.reindex()
    first = embedder.embedded
    report = eng.reindex(force=True, path_glob="a.txt")
    assert report.files_updated == 1 and report.files_unchanged == 0
    assert embedder.embedded == first and report.chunks_embedded == 0  # the text is the same
    assert vector_ids(data / "index") == chunk_keys(data / "index")
    write(data / "a.txt", "Apricots.", mtime=2e6)
    report = eng.reindex(force=True)
    assert report.files_updated == 2 and embedder.embedded - first == 1  # a.txt's new text
    assert vector_ids(data / "index") == chunk_keys(data / "index")


def test_unreadable_file_is_recorded_with_reason_and_not_retried_until_it_changes(
    engine: Engine, data: Path
) -> None:
    write(data / "good.txt", "Fine text here.", mtime=1e6)
    (data / "bad.pdf").write_bytes(b"this is not a pdf at all")
    os.utime(data / "bad.pdf", (1e6, 1e6))
    report = engine.reindex()
    assert [p for p, _ in report.files_failed] == ["bad.pdf"]
    assert report.files_failed[0][1]
    again = engine.reindex()
    assert again.files_unchanged == 1  # good.txt; bad.pdf, not re-read, counts as failed only
    assert [p for p, _ in again.files_failed] == ["bad.pdf"]
    assert engine.state().files_failed == 1 and engine.state().files_indexed == 1


def test_chunking_change_re_chunks_every_file(data: Path) -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(60))
    write(data / "long.txt", text)
    first = Engine(make_settings(data, chunk_size=1000, chunk_overlap=100), FakeEmbedder)
    first.load_model()
    first.reindex()
    n_big = len(catalog_rows(data / "index")["long.txt"])
    second = Engine(make_settings(data, chunk_size=300, chunk_overlap=50), FakeEmbedder)
    second.load_model()
    report = second.reindex()
    assert report.files_updated == 1
    assert len(catalog_rows(data / "index")["long.txt"]) > n_big
    assert vector_ids(data / "index") == chunk_keys(data / "index")


def test_a_pass_records_which_files_the_index_takes(data: Path) -> None:
    write(data / "a.txt", "Apples.")
    settings = make_settings(data, exts=(".txt",), exclude=("drafts/",))
    engine = Engine(settings, FakeEmbedder)
    engine.reindex()
    catalog = Catalog.open_reader(data / "index" / "catalog.sqlite3")
    try:
        assert catalog.get_meta("scope") == settings.scope_record
    finally:
        catalog.close()
    assert '".txt"' in settings.scope_record and '"drafts/"' in settings.scope_record


def test_model_change_drops_and_rebuilds_every_vector(data: Path) -> None:
    write(data / "a.txt", "Apples.")
    first = Engine(make_settings(data), lambda: FakeEmbedder(64, "model-one"))
    first.load_model()
    first.reindex()
    other = FakeEmbedder(64, "model-two")
    second = Engine(make_settings(data), lambda: other)
    second.load_model()
    report = second.reindex()
    assert report.files_unchanged == 1 and report.chunks_embedded == 1
    cat = Catalog.open(data / "index" / "catalog.sqlite3")
    assert cat.get_meta("vector_model") == vector_space(other)
    cat.close()


def test_reconcile_rebuilds_missing_vectors_and_drops_orphans(engine: Engine, data: Path) -> None:
    write(data / "a.txt", "Apples.")
    write(data / "b.txt", "Bananas.")
    engine.reindex()
    paths = IndexPaths(data / "index")
    store = VectorStore.load(paths.vectors, 64)
    store.remove([min(store.ids().tolist())])  # a chunk that lost its vector
    store.add([999_999], np.ones((1, 64), dtype=np.float32) / 8.0)  # a vector with no chunk
    store.save()
    fresh = Engine(make_settings(data), FakeEmbedder)
    fresh.load_model()
    report = fresh.reindex()
    assert report.chunks_embedded == 1
    assert vector_ids(data / "index") == chunk_keys(data / "index")


def test_keyword_search_works_before_any_vector_exists(data: Path) -> None:
    write(data / "a.txt", "The zeppelin landed in Lakehurst.")
    write(data / "b.txt", "Bananas are yellow.")
    eng = Engine(make_settings(data, model_wait_s=0.0), FakeEmbedder)
    # The model is never loaded; fill the catalog the way the first pass of a reindex does.
    paths = IndexPaths(data / "index")
    paths.folder.mkdir()
    cat = open_for_writing(paths)
    sync_files(cat, eng.settings)
    cat.close()
    outcome = eng.search("zeppelin", top_k=3)
    assert [h.chunk.path for h in outcome.hits] == ["a.txt"]
    assert outcome.hits[0].score is None
    assert any("keyword" in n for n in outcome.notices)


def test_without_the_model_indexing_and_search_fall_back_to_keywords(data: Path) -> None:
    def broken() -> FakeEmbedder:
        raise ModelUnavailable("model.safetensors is missing; pip install ...")

    write(data / "a.txt", "The zeppelin landed in Lakehurst.")
    eng = Engine(make_settings(data), broken)
    eng.load_model()
    report = eng.reindex()
    assert report.files_added == 1 and report.chunks_embedded == 0
    outcome = eng.search("zeppelin", top_k=3)
    assert [h.chunk.path for h in outcome.hits] == ["a.txt"]
    assert outcome.state.model_status.startswith("unavailable: model.safetensors is missing")
    assert any("unavailable" in n for n in outcome.notices)


def test_reindex_on_an_engine_never_started_loads_the_model_itself(data: Path) -> None:
    write(data / "a.txt", "Apples.")
    eng = Engine(make_settings(data), FakeEmbedder)  # no start(), no load_model()
    assert eng.reindex().chunks_embedded == 1


def test_document_title_is_the_file_name_and_its_metadata_title() -> None:
    assert document_title(Path("reports/q3_sales-report.pdf")) == "q3 sales report"
    assert document_title(Path("4471.txt")) == ""  # a bare number says nothing
    assert (
        document_title(Path("2023 Q1 MSFT.pdf"), "Form 10-Q for  Microsoft Corp")
        == "2023 Q1 MSFT — Form 10-Q for Microsoft Corp"
    )
    assert document_title(Path("4471.pdf"), "Annual report") == "Annual report"
    assert document_title(Path("notes.md"), "Notes") == "notes"


def test_chunks_are_embedded_under_their_file_title() -> None:
    assert embedding_text("q3 sales report", "Revenue rose.") == "q3 sales report\nRevenue rose."
    assert embedding_text("", "Revenue rose.") == "Revenue rose."


def test_a_pdf_is_found_by_the_title_in_its_metadata(engine: Engine, data: Path) -> None:
    from tests.docfactory import make_pdf

    make_pdf(data / "2023 Q1 ZNZB.pdf", ["Revenue rose.", "Costs fell."], title="Zanzibar Ltd")
    write(data / "other.txt", "Revenue rose and costs fell at another company.")
    engine.reindex()
    hits = engine.search("Zanzibar revenue", top_k=3, score_threshold=0.0).hits
    assert hits[0].chunk.path == "2023 Q1 ZNZB.pdf" and "keyword" in hits[0].channels
    conn = sqlite3.connect(data / "index" / "catalog.sqlite3")
    titles = {r[0] for r in conn.execute("SELECT DISTINCT title FROM chunks")}
    conn.close()
    assert titles == {"2023 Q1 ZNZB — Zanzibar Ltd", "other"}


def test_a_file_newly_ignored_leaves_the_index_and_exclude_keeps_paths_out(data: Path) -> None:
    write(data / "keep.txt", "kept words")
    write(data / "drafts" / "d.txt", "draft words")
    write(data / "scratch.md", "scratch words")
    engine = Engine(make_settings(data, exclude=("*.md",)), FakeEmbedder)
    engine.load_model()
    try:
        assert engine.reindex().files_added == 2
        (data / ".gitignore").write_text("drafts/\n")
        report = engine.reindex()
        assert report.files_removed == 1
        assert set(catalog_rows(data / "index")) == {"keep.txt"}
    finally:
        engine.stop()


def test_exclude_patterns_are_checked_on_the_command_line() -> None:
    from micro_rag_mcp.core.errors import ConfigError
    from micro_rag_mcp.options import parse_excludes

    assert parse_excludes([" drafts/ ", "*.min.js"]) == ("drafts/", "*.min.js")
    for bad in ["", "# comment", "a\nb"]:
        with pytest.raises(ConfigError, match="--exclude"):
            parse_excludes([bad])


def test_a_failed_file_is_counted_failed_not_also_unchanged(data: Path) -> None:
    write(data / "a.md", "Apples grow in the orchard.", mtime=1_000_000_000)
    (data / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    os.utime(data / "broken.pdf", (1_000_000_000, 1_000_000_000))  # an old stamp: trusted
    engine = Engine(make_settings(data), FakeEmbedder)
    engine.load_model()
    try:
        reports = [engine.reindex() for _ in range(3)]
    finally:
        engine.stop()
    assert [(r.files_added, r.files_unchanged) for r in reports] == [(1, 0), (0, 1), (0, 1)]
    assert all([p for p, _ in r.files_failed] == ["broken.pdf"] for r in reports)
