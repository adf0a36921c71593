"""Catalog readers kept between searches: reused while the file is the same one, never
once it was replaced, and never after a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from micro_rag_mcp.core.records import FileRecord, NewChunk
from micro_rag_mcp.local.answers.reader_pool import ReaderPool
from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt


def store(path: Path, name: str, text: str) -> None:
    catalog = Catalog.open(path)
    try:
        record = FileRecord(name, ".txt", len(text), 1, None, "ok", None)
        catalog.writes.store_file(record, [NewChunk(0, 0, len(text), 1, 1, None, "", text)])
    finally:
        catalog.close()


def paths_found(catalog: Catalog, word: str) -> set[str]:
    ids = [cid for cid, _ in catalog.keywords.keyword_search(f'"{word}"', 10)]
    return {c.path for c in catalog.chunks.fetch(ids).values()}


@pytest.fixture
def catalog_path(tmp_path: Path) -> Path:
    path = tmp_path / "catalog.sqlite3"
    store(path, "a.txt", "harbor cranes")
    return path


def test_the_same_reader_serves_the_next_search_and_sees_what_was_written_since(
    catalog_path: Path,
) -> None:
    pool = ReaderPool(catalog_path)
    with pool.reader() as first:
        assert paths_found(first, "harbor") == {"a.txt"}
    store(catalog_path, "b.txt", "harbor tugs")
    with pool.reader() as second:
        assert second is first
        assert paths_found(second, "harbor") == {"a.txt", "b.txt"}
    pool.close()


def test_a_catalog_replaced_on_disk_gets_a_new_reader(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    store(path, "old.txt", "harbor cranes")
    pool = ReaderPool(path)
    with pool.reader() as first:
        assert paths_found(first, "harbor") == {"old.txt"}
    for suffix in ("", "-wal", "-shm"):  # moved aside, as a damaged catalog is
        if Path(f"{path}{suffix}").exists():
            os.replace(f"{path}{suffix}", tmp_path / f"aside{suffix}")
    store(path, "new.txt", "harbor tugs")
    with pool.reader() as second:
        assert second is not first
        assert paths_found(second, "harbor") == {"new.txt"}
    pool.close()


def test_a_reader_that_failed_is_not_kept(catalog_path: Path) -> None:
    pool = ReaderPool(catalog_path)
    with pytest.raises(RuntimeError), pool.reader() as failed:
        raise RuntimeError("the search failed")
    with pool.reader() as after:
        assert after is not failed
    pool.close()


def test_no_catalog_yet_is_said_as_when_opening_one(tmp_path: Path) -> None:
    with (
        pytest.raises(CatalogCorrupt, match="does not exist"),
        ReaderPool(tmp_path / "catalog.sqlite3").reader(),
    ):
        pass
