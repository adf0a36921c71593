"""What a running service answers besides sessions: for ``micro-rag status`` and ``search``.

A request is one JSON line on a fresh connection, answered with one line:

- ``{"sessions": INDEX_FOLDER}``: the sessions attached to that index;
- ``{"search": {"index": INDEX_FOLDER, "query": …, "top_k": …, "threshold": …, "scope":
  [path_globs, modified_after, modified_before, file_types]}}``: the ``search`` tool's
  result on the engine the service already runs for that index (its model loaded, so it
  answers at once), or ``{"served": false}`` when it runs none (the command then opens
  the index itself).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from micro_rag_mcp.core.errors import MicroRagError
from micro_rag_mcp.search.scope import ScopeNames, parse_scope
from micro_rag_mcp.serve.tool_results import search_result, wire
from micro_rag_mcp.service.indexes import Indexes

CLI_NAMES = ScopeNames("--path-glob", "--modified-after", "--modified-before", "--file-types")


def answer(indexes: Indexes, request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request (run in a worker thread: a search takes a while)."""
    if "sessions" in request:
        sessions = indexes.sessions(Path(request["sessions"]))
        rows = [{"title": s.title, "pid": s.pid, "since": s.since} for s in sessions]
        return {"sessions": rows}
    if "search" in request:
        return _search(indexes, request["search"])
    return {"error": "unknown request"}


def _search(indexes: Indexes, asked: dict[str, Any]) -> dict[str, Any]:
    store = indexes.running(Path(asked["index"]))
    if store is None:
        return {"served": False}
    try:
        globs, after, before, types = asked.get("scope") or (None, None, None, None)
        scope = parse_scope(globs, after, before, types, CLI_NAMES)
        top_k, threshold = int(asked["top_k"]), float(asked["threshold"])
        outcome = store.search(asked["query"], top_k, threshold, scope)
    except MicroRagError as e:
        return {"error": str(e)}
    return {"served": True, "result": wire(search_result(outcome))}
