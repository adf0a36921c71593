"""``micro-rag search`` and ``status`` ask the user's running service first.

A service that serves the index has its engine open and its model loaded: a search it
answers takes no model load. When no service runs, or it does not serve that index, the
command opens the index itself, as before. ``MICRO_RAG_STANDALONE`` turns the asking off.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from micro_rag_mcp.core.errors import MicroRagError
from micro_rag_mcp.service.entry import service_options
from micro_rag_mcp.service.launch import ServiceUnavailable, ask
from micro_rag_mcp.service.runtime import ServiceDir, UnsafeDirectory, install_key

logger = logging.getLogger(__name__)


def ask_service(request: dict[str, Any]) -> dict[str, Any] | None:
    """The running service's answer, or None if there is none to ask (or it fails)."""
    options = service_options(os.environ)
    if options is None:
        return None
    try:
        where = ServiceDir.open(options.root, install_key())
    except UnsafeDirectory:
        return None
    try:
        return ask(where, request)
    except (ServiceUnavailable, OSError, ValueError) as e:
        logger.debug("the service did not answer: %s", e)
        return None
    finally:
        where.close()


def attached_sessions(index_folder: Path) -> list[dict[str, Any]]:
    """The sessions a running service serves on ``index_folder`` (none if no service)."""
    reply = ask_service({"sessions": str(index_folder)})
    return list(reply["sessions"]) if reply is not None else []


def search_in_service(
    index_folder: Path, query: str, top_k: int, threshold: float, scope: list[Any]
) -> dict[str, Any] | None:
    """The search tool's result from the service's engine, or None if it serves no such
    index; MicroRagError with its sentence if it could not search."""
    request = {"index": str(index_folder), "query": query, "top_k": top_k}
    request |= {"threshold": threshold, "scope": scope}
    reply = ask_service({"search": request})
    if reply is None or not reply.get("served", "error" in reply):
        return None
    if "error" in reply:
        raise MicroRagError(str(reply["error"]))
    logger.info("answered by the running service, with its engine and model")
    result: dict[str, Any] = reply["result"]
    return result
