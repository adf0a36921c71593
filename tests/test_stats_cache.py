"""The counts every search reports are cached, and follow every write, whoever makes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from micro_rag_mcp.core.records import FileRecord, NewChunk
from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.local.catalog.stats_cache import StatsCache


def record(path: str) -> FileRecord:
    return FileRecord(path, ".txt", 10, 1, None, "ok", None)


def chunks(*texts: str) -> list[NewChunk]:
    return [NewChunk(i, 0, len(t), 1, 1, None, "", t) for i, t in enumerate(texts)]


def test_counts_are_kept_until_another_connection_writes(tmp_path: Path) -> None:
    writer = Catalog.open(tmp_path / "catalog.sqlite3")
    reader = Catalog.open_reader(tmp_path / "catalog.sqlite3")
    cache = StatsCache()
    first = cache.get(reader)
    assert (first.files_indexed, first.chunks) == (0, 0)
    assert cache.get(reader) is first  # nothing changed: not counted again
    writer.writes.store_file(record("a.txt"), chunks("alpha", "beta"))
    assert (cache.get(reader).files_indexed, cache.get(reader).chunks) == (1, 2)
    writer.writes.remove_file("a.txt")
    assert cache.get(reader).chunks == 0
    writer.close()
    reader.close()


def test_counts_follow_a_write_from_another_process(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite3"
    Catalog.open(path).close()
    reader = Catalog.open_reader(path)
    cache = StatsCache()
    assert cache.get(reader).chunks == 0
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from micro_rag_mcp.local.catalog import Catalog\n"
        "from tests.test_stats_cache import chunks, record\n"
        "catalog = Catalog.open(Path(sys.argv[1]))\n"
        "catalog.writes.store_file(record('b.txt'), chunks('x', 'y', 'z'))\n"
    )
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=60, cwd=root)
    assert cache.get(reader).chunks == 3
    reader.close()
