"""The catalog: the one truth of the index, in SQLite.

Files, their chunks (text and citation positions) and the run identity live here. An
FTS5 table over the chunk text is the keyword channel. Every change of one file is one
transaction, so a reader (in this process or another) sees a file's old chunks or its
new ones, never a mix. Chunk ids come from AUTOINCREMENT and are never reused. Each chunk
records the key of its vector (``vector_text.vector_key``, a hash of its embedded text):
the FAISS index (derived data) is keyed by it and reconciled against this table by key
alone, so a vector outlives a chunk id and serves every chunk of its text.
"""

from micro_rag_mcp.local.catalog.database import Catalog, CatalogStats, version_of
from micro_rag_mcp.local.catalog.schema import (
    INDEX_VERSION,
    CatalogCorrupt,
    OtherVersion,
    is_damage,
)

__all__ = [
    "INDEX_VERSION",
    "Catalog",
    "CatalogCorrupt",
    "CatalogStats",
    "OtherVersion",
    "is_damage",
    "version_of",
]
