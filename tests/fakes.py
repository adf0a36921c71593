"""A small deterministic embedder for fast tests: hashed bag of words, L2-normalized."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    """Texts that share words get similar vectors; the same text always the same vector."""

    def __init__(
        self, dimension: int = 64, model_id: str = "fake-bow-64", delay_per_text: float = 0.0
    ) -> None:
        self._dimension = dimension
        self._delay = delay_per_text
        self._model_id = model_id
        self.calls = 0
        self.embedded = 0

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def _one(self, text: str) -> npt.NDArray[np.float32]:
        v = np.zeros(self._dimension, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
            v[h % self._dimension] += 1.0
        if not v.any():
            v[0] = 1.0
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.embedded += len(texts)
        if self._delay:
            time.sleep(self._delay * len(texts))
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._one(text)


SEARCH_THREADS = "micro-rag-search"  # the engine's search pool names its threads so


class GatedEmbedder(FakeEmbedder):
    """A fake that embeds documents only while its gate is open, so a test can hold a pass
    in the middle of a step; queries, and the few passages a search embeds with its query
    (in the engine's search threads), are never held."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.held = threading.Event()  # set once a call found the gate closed

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        searching = threading.current_thread().name.startswith(SEARCH_THREADS)
        if not self.gate.is_set() and not searching:
            self.held.set()
            if not self.gate.wait(60):
                raise TimeoutError("the test never opened the gate")
        return super().embed_documents(texts)
