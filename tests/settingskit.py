"""Settings for a test's data folder: its index beside it, not watched unless asked."""

from __future__ import annotations

from pathlib import Path

from micro_rag_mcp.core.settings import Settings
from tests.lanes import require_slow


def make_settings(data: Path, **kw: object) -> Settings:
    """Settings for a test folder; the folder is not watched unless ``watch`` says so (and
    a test that starts the real watcher must be marked slow)."""
    kw.setdefault("watch", "off")
    kw.setdefault("index_folder", data / "index")
    if kw["watch"] != "off":
        require_slow("the real watcher")
    return Settings(data_folder=data, **kw)  # type: ignore[arg-type]
