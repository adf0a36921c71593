"""Sentence embeddings run by onnxruntime on the CPU: the embedder and its session.

The encoders (``files``): all-MiniLM-L6-v2 (English) and multilingual-e5-small. Their
weights come from pip packages and are checked against a pinned sha256, read into arrays
(``graphs``) and handed to a session on a small ONNX graph that declares them
(``bert_graph``), shipped in this package and pinned by sha256 too
(``files.shipped_graph``). e5's word table is the exception: read from its file as each
batch needs its rows, fed to the graph as an input (``WordVectors``). Nothing is
downloaded. Heavy libraries are imported only when a model is loaded (``loader``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from micro_rag_mcp.core.errors import ModelUnavailable
from micro_rag_mcp.core.heap import trim_heap
from micro_rag_mcp.model.bert_graph import WORD_VECTORS
from micro_rag_mcp.model.files import (
    ENCODERS,
    MINILM,
    EncoderName,
    find_weights,
    install_hint,
    shipped_graph,
    verify_weights,
)
from micro_rag_mcp.model.tokens import Encoding, TokenizesBatches

if TYPE_CHECKING:
    import numpy.typing as npt
    import onnxruntime

logger = logging.getLogger(__name__)

MODEL_ID = MINILM.model_id
INT8_SUFFIX = "+int8"  # in the model id of the quantized encoder (handle.recorded_precision)
# Each int8 encoder's own suffix. MiniLM: its products on the shipped int8 weights, three
# in fp32 ("/w8f3"; "/w8" ran all eighteen in int8; 0.2.0's "+int8" alone named
# onnxruntime's requantization of them: other vectors, so another space each). e5-small:
# its products on int8 weights requantized from the 4-bit ones (``e5_graph.INT8_KEPT``).
INT8_MODEL_SUFFIX = INT8_SUFFIX + "/w8f3"
INT8_MODEL_SUFFIXES: dict[EncoderName, str] = {
    "minilm": INT8_MODEL_SUFFIX,
    "e5-small": INT8_SUFFIX + "/w7k12",  # 7-bit weights, twelve products kept 4-bit
}
DIMENSION = 384
# MiniLM: a run of 32 texts of 256 tokens peaked at 682 MB, of 8 at 291 MB, at the same
# CPU per text (6.47 against 6.48 s for 64 texts, one process each, two rounds); a first
# index of 2,000 notes peaked at 797 MB in the service with 32.
DEFAULT_BATCH_SIZE = 8
# e5 reads up to 512 tokens: a batch of 32 such holds 32 x 12 x 512 x 512 attention
# scores (400 MB a tensor) and peaked at 1.8 GB; 8 at 737 MB; 4 at 389 MB (the load's own
# peak), embedding as many passages per CPU-second (5.7 against 5.5).
E5_BATCH_SIZE = 4


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalized float32 vectors of one fixed vector space."""

    @property
    def model_id(self) -> str:
        """Identifies the vector space (model name and weights checksum)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Rows in input order, shape ``(len(texts), dimension)``."""
        ...

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One vector, shape ``(dimension,)``."""
        ...


class WordVectors(Protocol):
    """A word table kept outside the session (e5's): the graph takes the batch's rows as
    its input ``word_vectors``."""

    def vectors(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]: ...

    def release(self) -> None: ...


@runtime_checkable
class CountsTokens(Protocol):
    """An embedder that can say how many tokens each text is embedded as: a batch is
    padded to its longest member in tokens, so steps are best grouped by this count."""

    def token_counts(self, texts: Sequence[str]) -> list[int]: ...


class OnnxEmbedder:
    """``Embedder`` backed by an onnxruntime session; safe to call from several threads."""

    def __init__(
        self,
        session: onnxruntime.InferenceSession,
        tokenizer: TokenizesBatches,
        *,
        model_id: str = MODEL_ID,
        dimension: int = DIMENSION,
        batch_size: int = DEFAULT_BATCH_SIZE,
        sort_by_length: bool = True,
        prefixes: tuple[str, str] = ("", ""),
        keep: object = None,
        words: WordVectors | None = None,
    ) -> None:
        """``prefixes``: what a passage and a query are preceded by (e5's ``passage: ``
        and ``query: ``); ``keep``: what must live as long as the session (its weights);
        ``words``: the word table, where the graph takes word vectors as an input."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._session = session
        self._passage, self._query = prefixes
        self._keep = keep
        self._words = words
        self._tokenizer = tokenizer
        self._model_id = model_id
        self._dimension = dimension
        self._batch_size = batch_size
        self._sort_by_length = sort_by_length

    @property
    def model_id(self) -> str:
        """Identifies the vector space (model name and weights checksum)."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """Length of every vector (384)."""
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``; rows are unit length and in input order."""
        if isinstance(texts, str):
            raise TypeError("embed_documents expects a sequence of strings, not a string")
        return self._embed(texts, self._passage)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one text as a query; shape ``(dimension,)``."""
        vector: npt.NDArray[np.float32] = self._embed([text], self._query)[0]
        return vector

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text as ``embed_documents`` runs it (truncated)."""
        return [len(e.ids) for e in self._encode(texts, self._passage)]

    def _embed(self, texts: Sequence[str], prefix: str) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self._encode(texts, prefix)
        for rows in self._batches(encodings):
            out[rows] = self._run([encodings[i] for i in rows])
        return out

    def _encode(self, texts: Sequence[str], prefix: str) -> Sequence[Encoding]:
        return self._tokenizer.encode_batch([prefix + text.strip() for text in texts])

    def release_memory(self) -> None:
        """Give back the working memory of the largest batch so far; for when it is idle.

        onnxruntime's arena keeps what its largest run needed (MiniLM's 8 x 256-token
        batch: about 100 MB) for the next run: ``shrink_arena`` frees it, then the C heap
        returns the pages to the system, and a word table kept in its file (e5's) the
        pages its texts read. The tokenizer forgets the words it has seen.
        """
        self.shrink_arena()
        self._tokenizer.forget()
        if self._words is not None:
            self._words.release()
        trim_heap()

    def shrink_arena(self) -> None:
        """Free the arena's unused blocks, by a one-token run that asks it to shrink.

        Safe while other calls run: the arena frees only what no run uses.
        """
        import onnxruntime

        options = onnxruntime.RunOptions()
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self._session.run(None, one_token(self._words), options)

    def _batches(self, encodings: Sequence[Encoding]) -> list[npt.NDArray[np.intp]]:
        """Index groups of ``batch_size``, longest first when sorting is on."""
        if self._sort_by_length:
            lengths = np.array([len(encoding.ids) for encoding in encodings])
            order = np.argsort(-lengths, kind="stable")
        else:
            order = np.arange(len(encodings))
        return [order[i : i + self._batch_size] for i in range(0, len(order), self._batch_size)]

    def _run(self, batch: Sequence[Encoding]) -> npt.NDArray[np.float32]:
        feeds = _with_words(_pad_batch(batch), self._words)
        (vectors,) = self._session.run(None, feeds)
        return np.asarray(vectors, dtype=np.float32)


def one_token(words: WordVectors | None) -> dict[str, npt.NDArray[Any]]:
    """The feeds of a run on the one token 1: the cheapest a graph takes."""
    one = np.ones((1, 1), dtype=np.int64)
    return _with_words({"input_ids": one, "attention_mask": one, "token_type_ids": one * 0}, words)


def _with_words(
    feeds: dict[str, npt.NDArray[Any]], words: WordVectors | None
) -> dict[str, npt.NDArray[Any]]:
    """``feeds`` and, for a graph that takes them, the word vectors of its ids."""
    if words is not None:
        feeds[WORD_VECTORS] = words.vectors(feeds["input_ids"])
    return feeds


def _pad_batch(batch: Sequence[Encoding]) -> dict[str, npt.NDArray[Any]]:
    """Right-pad a batch to its longest member (pad id 0, mask 0)."""
    width = max(len(encoding.ids) for encoding in batch)
    ids = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, encoding in enumerate(batch):
        n = len(encoding.ids)
        ids[row, :n] = encoding.ids
        mask[row, :n] = encoding.attention_mask
        types[row, :n] = encoding.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _silence_onnxruntime() -> None:
    """Turn onnxruntime's telemetry off, before its first import.

    On Linux, onnxruntime 1.32 writes a device id and an event store under
    ``~/.cache/Microsoft/DeveloperTools/.onnxruntime`` as it is imported, and can send
    usage events; this server promises no network and no file outside its index. The
    variable is the only switch that acts before the import; the call also covers a
    process that imported onnxruntime earlier.
    """
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    import onnxruntime

    onnxruntime.disable_telemetry_events()


def session_options(threads: int | None) -> onnxruntime.SessionOptions:
    """The session's options: all graph optimizations, ``threads`` intra-op threads."""
    _silence_onnxruntime()
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    return options


def open_session(model: bytes, options: onnxruntime.SessionOptions) -> onnxruntime.InferenceSession:
    """A CPU session on a serialized model."""
    import onnxruntime as ort

    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def load_embedder(
    batch_size: int | None = None,
    threads: int | None = None,
    *,
    encoder: EncoderName = "minilm",
    weights_file: Path | None = None,
    quantize: bool = False,
) -> OnnxEmbedder:
    """Load ``encoder``'s pinned weights (about 1 s for MiniLM); raise ``ModelUnavailable``.

    ``batch_size``: texts a run takes (None: 8 for MiniLM, 4 for e5).
    ``threads`` sets onnxruntime's intra-op threads (None: one per core).
    ``weights_file`` skips the package lookup but is still checksum-verified.
    ``quantize`` runs the products on int8 weights (MiniLM's as shipped, e5's requantized
    from its 4-bit blocks): faster, slightly different vectors (so a different
    ``model_id``).
    """
    from micro_rag_mcp.model import loader
    from micro_rag_mcp.model.external_weights import add_arrays, session_copied
    from micro_rag_mcp.model.graphs import graph_name, read_encoder

    started = time.perf_counter()
    spec = ENCODERS[encoder]
    path = find_weights(spec) if weights_file is None else verify_weights(spec, weights_file)
    try:
        files = read_encoder(encoder, path, int8=quantize)
    except (ValueError, OSError) as e:
        raise ModelUnavailable(
            f"Cannot read the {encoder} weights in {path}: {e}. {install_hint(spec, True)}"
        ) from e
    options = session_options(threads)
    model_id = spec.model_id + (INT8_MODEL_SUFFIXES[encoder] if quantize else "")
    graph = shipped_graph(graph_name(encoder, quantize))
    tokenizer = loader.tokenizer_for(files)
    feeds, probe, words = files.weights.feeds(), files.weights.probe, files.words
    del files  # what the feeds do not hold (MiniLM's untransposed products, e5's vocabulary)
    add_arrays(options, feeds)
    try:
        session = open_session(graph, options)
    except Exception as e:  # onnxruntime raises its own types for a graph it refuses
        raise ModelUnavailable(f"The {encoder} graph cannot be run: {e}") from e
    if session_copied(session, feeds, probe, one_token(words)):
        feeds.clear()  # the session's copies are the model now
    trim_heap()  # the graph's bytes, the session's set-up and (copied) the arrays are garbage
    logger.info("loaded %s from %s in %.2f s", model_id, path, time.perf_counter() - started)
    return OnnxEmbedder(
        session,
        tokenizer,
        model_id=model_id,
        batch_size=batch_size or (E5_BATCH_SIZE if encoder == "e5-small" else DEFAULT_BATCH_SIZE),
        prefixes=loader.E5_PREFIXES if encoder == "e5-small" else ("", ""),
        keep=feeds,
        words=words,
    )
