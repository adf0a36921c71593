"""Retrieval benchmarks for micro-rag-mcp (not shipped; run from a clone)."""

from __future__ import annotations

import tempfile
from pathlib import Path


def work_folder(name: str) -> Path:
    """The default work folder of a benchmark: ``bench-<name>`` in the temporary folder."""
    return Path(tempfile.gettempdir()) / f"bench-{name}"
