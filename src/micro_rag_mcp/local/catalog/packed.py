"""A chunk's text as the catalog stores it: CJK text compressed, any other as it is.

A CJK character takes three bytes of UTF-8, and a chunk of CJK text about 3 KB: zlib
halves it (JaQuAD's and LeCaRD's chunks to 0.55 and 0.47 of their bytes). Such a text is
stored as a BLOB of its compressed UTF-8; a text without CJK characters stays TEXT, as
an English catalog always held it. Every read of ``chunks.text`` goes through
``unpack``; the word index (``chunks_fts``) is given the plain text by ``writes``.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

from micro_rag_mcp.core.records import StoredChunk
from micro_rag_mcp.text.cjk import has_cjk


def pack(text: str) -> str | bytes:
    """What ``chunks.text`` stores of ``text``."""
    if not has_cjk(text):
        return text
    raw = text.encode("utf-8", "surrogatepass")
    packed = zlib.compress(raw, 9)
    return packed if len(packed) < len(raw) else text


def unpack(stored: str | bytes) -> str:
    """The text ``pack`` stored."""
    if isinstance(stored, bytes):
        return zlib.decompress(stored).decode("utf-8", "surrogatepass")
    return stored


def stored_chunk(row: Sequence[Any]) -> StoredChunk:
    """A ``StoredChunk`` of a row of its fields in order, the text as stored."""
    fields = list(row)
    fields[10] = unpack(fields[10])
    return StoredChunk(*fields)
