"""An embedder that answers from an embedded index's saved vectors where it can.

Comparing the two stores on one dataset needs the same vectors in both. Embedding a
corpus again for the Milvus store costs as long as the first build (SciFact's 11,640
chunks took 14 minutes on these cores) and gives the very vectors the embedded index
already holds. ``StoredVectors`` looks each passage up by the text it is embedded as
(``embedding_text``) in an index folder's catalog and vector file, and sends only what
it does not find, and every query, to the real model. Its ``model_id`` is the model's,
so the store records the same vector space.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from micro_rag_mcp.local.catalog.packed import unpack
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.text.vector_text import embedding_text

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger("bench")


class StoredVectors:
    """``embedder``, with each passage's vector taken from ``index`` when it holds one."""

    def __init__(self, embedder: Embedder, index: Path) -> None:
        import faiss
        import numpy as np

        self.embedder = embedder
        flat = faiss.read_index(str(index / "faiss.index"))
        uri = f"file:{index / 'catalog.sqlite3'}?mode=ro"
        with sqlite3.connect(uri, uri=True) as db:  # vectors are keyed by their text's key
            rows = db.execute("SELECT vkey, title, text FROM chunks GROUP BY vkey").fetchall()
        held = set(faiss.vector_to_array(flat.id_map).tolist())
        rows = [r for r in rows if r[0] in held]
        ids = np.asarray([r[0] for r in rows], dtype=np.int64)
        vectors = flat.reconstruct_batch(ids) if len(ids) else np.zeros((0, embedder.dimension))
        self.known = {  # a CJK text is stored compressed
            embedding_text(title, unpack(text)): vectors[i]
            for i, (_, title, text) in enumerate(rows)
        }
        self.reused = self.embedded = 0
        logger.info("%d passage vectors from %s", len(self.known), index)

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        missing = [i for i, t in enumerate(texts) if t not in self.known]
        for i, t in enumerate(texts):
            if t in self.known:
                out[i] = self.known[t]
        if missing:
            out[missing] = self.embedder.embed_documents([texts[i] for i in missing])
        self.reused += len(texts) - len(missing)
        self.embedded += len(missing)
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.embedder.embed_query(text)
