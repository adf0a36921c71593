"""The README is the manual: every flag and tool parameter is documented, nothing more."""

from __future__ import annotations

import re
from pathlib import Path

from micro_rag_mcp.main import build_parser
from micro_rag_mcp.server import FailedFile, IndexStatus, ReindexResult, SearchHit, SearchResult

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_every_command_line_flag_is_documented_and_no_other() -> None:
    flags = {
        opt
        for action in build_parser()._actions
        for opt in action.option_strings
        if opt.startswith("--")
    }
    table = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`(--[a-z-]+)", table))
    assert flags == documented


def test_every_tool_parameter_and_result_field_is_documented() -> None:
    tools = README.split("## Tools", 1)[1].split("\n## ", 1)[0]
    for name in ["search", "reindex", "query", "top_k", "score_threshold", "force", "path_glob"]:
        assert f"`{name}`" in tools, name
    for model in (SearchHit, SearchResult, IndexStatus, ReindexResult, FailedFile):
        for field in model.model_fields:
            assert f"`{field}`" in tools, f"{model.__name__}.{field}"
    reindex = tools.split("### `reindex`", 1)[1]
    for field in ReindexResult.model_fields:
        assert f"| `{field}` |" in reindex, f"ReindexResult.{field} has no row"
