"""The dev collections of ``bench.levers`` on the Milvus store, given the embedded
index's own vectors, so only the stores differ.

A milvus-lite server is started for the run (``tests.milvuskit.MilvusServer``, as the
tests and ``bench.perf_milvus`` start it), its data under the run's work folder, unless
the address of another Milvus is given; each
collection is indexed into a Milvus collection of its own, named after it, from the
documents ``bench.retrieval`` wrote, through the real store path (``bench.retrieval.index``).
Passage vectors come from the embedded index (``bench.stored_vectors``): embedding a
collection again would take as long as its first build and give the same vectors. The
store's collections outlive one run in the data folder, so a second run indexes nothing
new (the store's pass finds every file unchanged).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from bench.retrieval import Workspace, index
from bench.stored_vectors import StoredVectors
from micro_rag_mcp.core.address import parse_store_url
from micro_rag_mcp.model.embedder import Embedder

logger = logging.getLogger("bench")

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


@contextmanager
def milvus_at(work: Path, url: str | None = None) -> Iterator[Callable[[str], str]]:
    """The address of a named collection on the Milvus at ``url``
    (``milvus://HOST:PORT/DB``), or, without one, on a milvus-lite server started for the
    block (its data and log in ``work``) and stopped after it."""
    if url is not None:
        base = url.partition("?")[0]
        yield lambda name: f"{base}?collection={collection_name(name)}"
        return
    from tests.milvuskit import MilvusServer

    work.mkdir(parents=True, exist_ok=True)
    server = MilvusServer(work)
    server.start()
    try:
        yield lambda name: server.url(collection_name(name))
    finally:
        server.stop()


def collection_name(name: str) -> str:
    """A Milvus collection name for a dev collection (letters, digits, underscores)."""
    return "lev_" + _UNSAFE.sub("_", name)


def on_milvus(ws: Workspace, url: str, embedder: Embedder, work: Path) -> Workspace:
    """``ws``'s documents indexed into the store at ``url`` (a ``milvus://`` address with
    its collection) from ``ws``'s embedded index's vectors; the workspace that searches it.
    ``work`` receives the store pass's record (the embedded set's marker is left alone)."""
    work.mkdir(parents=True, exist_ok=True)
    on_store = replace(ws, root=work, info={}, store=parse_store_url(url))
    stored = StoredVectors(embedder, ws.index)
    run = index(on_store, stored)
    logger.info(
        "%s: %d chunks in the store, %d vectors reused, %d embedded",
        url,
        run["chunks_total"],
        stored.reused,
        stored.embedded,
    )
    if stored.embedded:
        logger.warning("%s: %d passages were not in the embedded index", url, stored.embedded)
    return on_store
