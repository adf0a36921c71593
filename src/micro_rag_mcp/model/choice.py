"""Which encoder ``--model auto`` runs: the folder's language chooses, once.

MiniLM reads English only; multilingual-e5-small reads about 100 languages but takes
3.3x the CPU time to embed. ``auto`` (the default) runs e5-small where a folder needs
it: the first indexing pass samples the text it stores (at most ``PER_FILE`` characters
of each file, ``SAMPLE_CHARS`` in all, or what it has after ``SAMPLE_S`` seconds), and
at ``FOREIGN_FROM`` of it not English (``text.language.foreign_share``) e5-small is
chosen, else MiniLM. The choice is recorded as the index's vector space and kept from
then on: an index made before (MiniLM) keeps MiniLM, and asking for another encoder by
name re-embeds, never mixes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from micro_rag_mcp.core.settings import ModelName
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.text.language import foreign_share

logger = logging.getLogger(__name__)

FOREIGN_FROM = 0.10  # the share of foreign text from which e5-small is chosen
PER_FILE = 4_000  # characters sampled of one file, at most
SAMPLE_CHARS = 32_000  # characters sampled in all, at most
SAMPLE_S = 2.0  # a sample that holds some text is judged after this long


@dataclass(frozen=True, slots=True)
class AutoLoad:
    """How to load the encoder the folder's language chooses, once it is chosen."""

    load: Callable[[ModelName], Embedder]

    def resolved(self, decide: Callable[[], ModelName]) -> Callable[[], Embedder]:
        """A plain loader that asks ``decide`` at its load (the Milvus store: the
        encoder recorded in the collection, else MiniLM)."""
        return lambda: self.load(decide())


Loader = Callable[[], Embedder] | AutoLoad  # a model asked for by name, or by auto


def encoder_for(share: float) -> ModelName:
    """The encoder for a folder whose sampled text is ``share`` foreign."""
    return "e5-small" if share >= FOREIGN_FROM else "minilm"


@dataclass(slots=True)
class Sample:
    """The text a pass has stored so far, as much of it as the choice reads."""

    clock: Callable[[], float] = time.monotonic
    started: float = field(default=-1.0)
    parts: list[str] = field(default_factory=list)
    chars: int = 0
    per_file: dict[object, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.clock()

    @property
    def full(self) -> bool:
        return self.chars >= SAMPLE_CHARS

    def add(self, file: object, text: str) -> None:
        """Add a part of ``file``'s text, as far as the limits allow."""
        room = min(PER_FILE - self.per_file.get(file, 0), SAMPLE_CHARS - self.chars)
        if room <= 0 or not text:
            return
        part = text[:room]
        self.parts.append(part)
        self.chars += len(part)
        self.per_file[file] = self.per_file.get(file, 0) + len(part)

    def ready(self, ended: bool) -> bool:
        """Whether to judge now: the sample is full, the pass has read every file
        (``ended``), or the time is up and there is something to judge."""
        late = self.clock() - self.started >= SAMPLE_S
        return self.full or ended or (late and self.chars > 0)

    def choice(self) -> tuple[ModelName, float]:
        """The encoder the sample chooses, and its foreign share."""
        share = foreign_share("\n".join(self.parts))
        return encoder_for(share), share
