"""The choice of ``--model auto``, made by the first pass from the text it stores.

While the model waits for its choice, the pass samples the opening text of the files
its reading thread has stored (``model.choice.Sample``) and, once the sample can be
judged, names the encoder; the model then loads while reading goes on. A pass that
stores no text at all chooses nothing: it reads only, and the next pass chooses.
"""

from __future__ import annotations

import logging

from micro_rag_mcp.local.catalog import Catalog
from micro_rag_mcp.model.choice import PER_FILE, Sample
from micro_rag_mcp.model.handle import ModelHandle

logger = logging.getLogger(__name__)

ROWS = 256  # chunks read from the catalog at a time


class Chooser:
    """Samples what a pass stores and chooses the encoder by it, once."""

    def __init__(self, catalog: Catalog, model: ModelHandle, sample: Sample | None = None) -> None:
        self._catalog = catalog
        self._model = model
        self._sample = sample or Sample()
        self._cursor = 0
        self.done = False
        model.sampling = True  # a search may wait for the choice now

    def close(self) -> None:
        """The pass ends (or chose nothing): nobody waits for a choice any more."""
        self._model.sampling = False

    def __call__(self, ended: bool) -> bool:
        """Sample what is stored now and choose if the sample can be judged; ``ended``:
        whether the pass has stored every file it reads. True when there is nothing to
        choose by (the pass stored no text): the pass goes on without a model."""
        if self.done:
            return False
        self._read()
        if not self._sample.ready(ended):
            return False
        self.done = True
        self.close()
        if not self._sample.chars:
            return True
        chosen, share = self._sample.choice()
        logger.info(
            "the folder's text is %.0f%% not English (%d characters of %d files sampled)",
            100 * share,
            self._sample.chars,
            len(self._sample.per_file),
        )
        self._model.choose(chosen)
        return False

    def _read(self) -> None:
        while not self._sample.full:
            rows = self._catalog.chunks.heads_after(self._cursor, PER_FILE, ROWS)
            if not rows:
                return
            for cid, file_id, text in rows:
                self._cursor = cid
                self._sample.add(file_id, text)
