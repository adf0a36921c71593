"""Which formats this installation can read, and readers added to its registry by name.

An installation reads the formats whose dependencies it has: without the ``ocr`` extra it
has no reader for images. What it lacks is told apart from what the folder's scope leaves
out, so that a file another installation indexed from a format this one cannot read is
kept, not removed (``local.passes.indexer``).

A module named in ``Settings.readers`` adds readers to the registry: the reader process
imports it itself (a callable cannot cross into it), so a test can give a pass a reader
that waits, or take one away. The module holds ``READERS`` (suffix -> reader, added to the
registry or replacing its reader) and may hold ``LACKING`` (suffixes to have no reader for).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Collection, Container
from pathlib import Path
from types import ModuleType

from micro_rag_mcp.core.formats import FORMATS

logger = logging.getLogger(__name__)


def _module(name: str) -> ModuleType | None:
    return importlib.import_module(name) if name else None


def install(name: str) -> None:
    """Add the readers of module ``name`` to this process's registry ("" adds none)."""
    from micro_rag_mcp.ingest.readers import READERS

    module = _module(name)
    if module is None:
        return
    READERS.update(getattr(module, "READERS", {}))
    for suffix in getattr(module, "LACKING", ()):
        READERS.pop(suffix, None)


def lacking(name: str = "") -> frozenset[str]:
    """The suffixes of the known formats this installation has no reader for: those whose
    extra is not installed, and the ``LACKING`` of module ``name``, less its ``READERS``."""
    missing = {s for fmt in FORMATS if not fmt.available for s in fmt.suffixes}
    module = _module(name)
    if module is not None:
        missing |= set(getattr(module, "LACKING", ()))
        missing -= set(getattr(module, "READERS", {}))
    return frozenset(missing)


def left_to_others(folder: Path, gone: list[str], lacking: Collection[str]) -> list[str]:
    """The ``gone`` paths (relative to ``folder``) less the files still there whose format
    this installation has no reader for.

    Another installation on the same folder (one with the ``ocr`` extra) indexed them;
    they are left as it stored them, not dropped here to be read again there at its next
    start (27 s of OCR a start, on a folder of a few scans).
    """
    if not lacking:
        return gone
    kept = {rel for rel in gone if _suffix(rel) in lacking and (folder / rel).exists()}
    if kept:
        logger.info(
            "%d files of formats this installation cannot read (%s) are kept as another "
            "installation indexed them",
            len(kept),
            ", ".join(sorted({_suffix(rel) for rel in kept})),
        )
    return [rel for rel in gone if rel not in kept]


def read_here(rel: str, known: Container[str], lacking: Collection[str]) -> bool:
    """Whether this installation reads the file at ``rel``: not one already indexed
    (``known``) from a format it has no reader for (see ``left_to_others``)."""
    return not lacking or rel not in known or _suffix(rel) not in lacking


def _suffix(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""
