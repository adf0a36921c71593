"""The model's ONNX graph, kept in the index folder so a start need not build it again.

Building the graph takes a child process that imports the onnx package (``embedder``):
about half a second idle, more on a busy machine, on the way to a server's first answer
(a search waits for the model). The graph is 35 kB and depends only on the weights and
on the code that builds it, so it is saved once per index folder, under a key made of
the weights' checksum, ``GRAPH_FORMAT`` and the package version, and read back while the
key matches.

The file is written atomically (a kill mid-write leaves the old file or the new one) and
carries the checksum of the graph it holds, so a damaged file is never handed to
onnxruntime: it is built again and replaced. The cache is a convenience: a folder that
cannot be written (a read-only mount) only means the graph is built at every start.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

from micro_rag_mcp import __version__
from micro_rag_mcp.core.fsutil import atomic_write_bytes

logger = logging.getLogger(__name__)

GRAPH_FILE = "model-graph.onnx"
GRAPH_FORMAT = 1  # bump when bert_graph builds a different graph from the same weights
_MAGIC = b"micro-rag model graph"
_STALE_TEMPORARY_S = 600.0  # a temporary this old is no save in progress: a killed one's


def graph_key(weights_sha256: str) -> str:
    """What the saved graph must have been built from to be used as it is."""
    return f"weights {weights_sha256}; graph {GRAPH_FORMAT}; micro-rag-mcp {__version__}"


def cached_graph(folder: Path | None, key: str, build: Callable[[], bytes]) -> bytes:
    """The graph saved in ``folder`` under ``key``, or ``build()``'s, saved there for next time.

    With ``folder`` None the graph is built and nothing is written.
    """
    if folder is None:
        return build()
    path = folder / GRAPH_FILE
    graph = read_graph(path, key)
    if graph is not None:
        return graph
    graph = build()
    try:
        _remove_stale_temporaries(folder)
        atomic_write_bytes(path, encode(key, graph))
    except OSError as e:
        logger.info("the model graph is not kept in %s (%s); it is built at each start", folder, e)
    return graph


def kept_graph(folder: Path, key: str) -> bytes | None:
    """The graph saved in ``folder`` under ``key``, if there is a whole one."""
    return read_graph(folder / GRAPH_FILE, key)


def read_graph(path: Path, key: str) -> bytes | None:
    """The graph saved at ``path`` if it was built under ``key`` and is whole, else None."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        logger.info("cannot read %s (%s); building the model graph", path, e)
        return None
    decoded = decode(data)
    if decoded is None:
        logger.warning("%s is damaged; building the model graph again", path)
        return None
    saved_key, graph = decoded
    if saved_key != key:
        logger.info("%s was built for another model or version; building it again", path)
        return None
    return graph


def encode(key: str, graph: bytes) -> bytes:
    """A header (a magic line, the key, the graph's sha256), then the graph."""
    digest = hashlib.sha256(graph).hexdigest()
    return b"\n".join((_MAGIC, key.encode(), digest.encode(), graph))


def decode(data: bytes) -> tuple[str, bytes] | None:
    """The key and graph of ``encode``'s output, or None if the bytes are not that."""
    parts = data.split(b"\n", 3)
    if len(parts) != 4 or parts[0] != _MAGIC:
        return None
    _, key, digest, graph = parts
    if hashlib.sha256(graph).hexdigest().encode() != digest:
        return None
    return key.decode("utf-8", "replace"), graph


def _remove_stale_temporaries(folder: Path) -> None:
    """Temporaries of saves a kill interrupted; a recent one may be another process's
    save in progress, so only old ones go."""
    now = time.time()
    for tmp in folder.glob(f".{GRAPH_FILE}.*.tmp"):
        with contextlib.suppress(OSError):
            if now - tmp.stat().st_mtime > _STALE_TEMPORARY_S:
                tmp.unlink()
