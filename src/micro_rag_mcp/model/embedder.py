"""Sentence embeddings with all-MiniLM-L6-v2, run by onnxruntime on the CPU.

The weights come from a pip package and are checked against a pinned sha256 (see
``model_files``), described by an ONNX graph built in memory (see ``bert_graph``) and
run with onnxruntime. The graph leaves the weights in the package's safetensors file,
which onnxruntime memory-maps: servers on several folders share one copy. Nothing is
downloaded; the only file written is the built graph, kept in the index folder for the
next start (``graph_cache``). Heavy libraries are imported only when a model is loaded.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from micro_rag_mcp.core.errors import ModelUnavailable
from micro_rag_mcp.core.heap import trim_heap
from micro_rag_mcp.model.files import (
    MODEL_NAME,
    MODEL_SHA256,
    first_candidate,
    install_hint,
    verify_model_dir,
    while_verifying,
)
from micro_rag_mcp.model.files import find_model_dir as find_model_dir
from micro_rag_mcp.model.graph_cache import cached_graph, graph_key, kept_graph

if TYPE_CHECKING:
    import numpy.typing as npt
    import onnxruntime
    from tokenizers import Encoding, Tokenizer

logger = logging.getLogger(__name__)

MODEL_ID = f"{MODEL_NAME}@{MODEL_SHA256[:12]}"
INT8_SUFFIX = "+int8"  # of the model id of the quantized encoder
DIMENSION = 384
MAX_SEQ_LENGTH = 256
DEFAULT_BATCH_SIZE = 32
_GRAPH_TIMEOUT_S = 120.0  # building the graph takes about 0.5 s; a busy machine, longer


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
        tokenizer: Tokenizer,
        *,
        model_id: str = MODEL_ID,
        dimension: int = DIMENSION,
        batch_size: int = DEFAULT_BATCH_SIZE,
        sort_by_length: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._session = session
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
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch([text.strip() for text in texts])
        for rows in self._batches(encodings):
            out[rows] = self._run([encodings[i] for i in rows])
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one text; shape ``(dimension,)``."""
        vector: npt.NDArray[np.float32] = self.embed_documents([text])[0]
        return vector

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text as ``embed_documents`` runs it (truncated to 256)."""
        return [len(e.ids) for e in self._tokenizer.encode_batch([t.strip() for t in texts])]

    def release_memory(self) -> None:
        """Give back the working memory of the largest batch so far; for when it is idle.

        onnxruntime's arena keeps what its largest run needed (a 32 x 256-token batch:
        about 250 MB) for the next run: ``shrink_arena`` frees it, then the C heap
        returns the pages to the system.
        """
        self.shrink_arena()
        trim_heap()

    def shrink_arena(self) -> None:
        """Free the arena's unused blocks, by a one-token run that asks it to shrink.

        Safe while other calls run: the arena frees only what no run uses.
        """
        import onnxruntime

        options = onnxruntime.RunOptions()
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        one = np.ones((1, 1), dtype=np.int64)
        feeds = {"input_ids": one, "attention_mask": one, "token_type_ids": one * 0}
        self._session.run(None, feeds, options)

    def _batches(self, encodings: Sequence[Encoding]) -> list[npt.NDArray[np.intp]]:
        """Index groups of ``batch_size``, longest first when sorting is on."""
        if self._sort_by_length:
            lengths = np.array([len(encoding.ids) for encoding in encodings])
            order = np.argsort(-lengths, kind="stable")
        else:
            order = np.arange(len(encodings))
        return [order[i : i + self._batch_size] for i in range(0, len(order), self._batch_size)]

    def _run(self, batch: Sequence[Encoding]) -> npt.NDArray[np.float32]:
        feeds = _pad_batch(batch)
        (vectors,) = self._session.run(None, feeds)
        return np.asarray(vectors, dtype=np.float32)


def _pad_batch(batch: Sequence[Encoding]) -> dict[str, npt.NDArray[np.int64]]:
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


def _read_config(model_dir: Path) -> dict[str, Any]:
    try:
        raw = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(
            f"Cannot read {model_dir / 'config.json'}: {exc}. {install_hint(True)}"
        ) from exc
    if not isinstance(raw, dict):
        raise ModelUnavailable(f"{model_dir / 'config.json'} is not a JSON object.")
    return raw


def load_tokenizer(model_dir: Path) -> Tokenizer:
    """Tokenizer from tokenizer.json, truncating at 256 word pieces, never padding."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
    return tokenizer


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


def _create_session(
    model_dir: Path,
    threads: int | None,
    quantize: bool = False,
    work_dir: Path | None = None,
    cache_dir: Path | None = None,
    build_graph: Callable[[Path], bytes] | None = None,
) -> onnxruntime.InferenceSession:
    """Describe the model as an ONNX graph and open a CPU session on it."""
    options = session_options(threads)
    try:
        if quantize:
            return open_session(_quantized(in_memory_model(model_dir), work_dir), options)
        return open_mapped_session(model_dir, options, cache_dir, build_graph)
    except (KeyError, ValueError) as exc:
        raise ModelUnavailable(
            f"Model in {model_dir} is not a supported BERT checkpoint: {exc}. {install_hint(True)}"
        ) from exc


def open_session(model: bytes, options: onnxruntime.SessionOptions) -> onnxruntime.InferenceSession:
    """A CPU session on a serialized model."""
    import onnxruntime as ort

    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def open_mapped_session(
    model_dir: Path,
    options: onnxruntime.SessionOptions,
    cache_dir: Path | None = None,
    build_graph: Callable[[Path], bytes] | None = None,
) -> onnxruntime.InferenceSession:
    """A session whose fp32 weights stay in ``model.safetensors``, memory-mapped read-only
    by onnxruntime: nothing is copied, and processes share the pages.

    ``model_dir`` must hold the pinned weights (``verify_model_dir``). The graph is read
    from ``cache_dir`` (the index folder) when it was saved there for these weights, and
    saved there once built; with None it is built and nothing is written. ``build_graph``
    builds it (default: in a child process, ``_mapped_graph``).
    """
    build = build_graph or _mapped_graph
    graph = cached_graph(cache_dir, graph_key(MODEL_SHA256), lambda: build(model_dir))
    return open_graph_session(model_dir, graph, options)


def open_graph_session(
    model_dir: Path, graph: bytes, options: onnxruntime.SessionOptions
) -> onnxruntime.InferenceSession:
    """A session on a graph whose external weights are ``model_dir``'s safetensors file."""
    options.add_session_config_entry(
        "session.model_external_initializers_file_folder_path", str(model_dir)
    )
    return open_session(graph, options)


def _mapped_graph(model_dir: Path) -> bytes:
    """The fp32 graph (35 kB), built in a child process so that this one never imports
    the onnx package (about 13 MB that would stay); ``ValueError`` if it cannot be built."""
    import subprocess

    try:
        done = subprocess.run(
            [sys.executable, "-m", "micro_rag_mcp.model.bert_graph", str(model_dir)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_GRAPH_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ValueError(f"the model graph could not be built ({e})") from e
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ValueError(reason[-1] if reason else f"exit status {done.returncode}")
    return done.stdout


def in_memory_model(model_dir: Path) -> Any:
    """The fp32 graph with its weights inside (what quantization reads and rewrites)."""
    from safetensors.numpy import load_file

    from micro_rag_mcp.model.bert_graph import BertConfig, build_bert_model

    config = BertConfig.from_dict(_read_config(model_dir))
    return build_bert_model(load_file(model_dir / "model.safetensors"), config)


def _quantized(model: Any, work_dir: Path | None) -> bytes:
    """Dynamic int8 quantization (per channel) of the weights' matrix products.

    onnxruntime quantizes files, not graphs in memory: the two files live in a temporary
    folder inside ``work_dir`` (the index folder, for a server) and are gone on return.
    """
    import tempfile

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="quantize-", dir=work_dir) as tmp:
        src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, src)
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True)
        return dst.read_bytes()


def load_embedder(
    batch_size: int = DEFAULT_BATCH_SIZE,
    threads: int | None = None,
    *,
    model_dir: Path | None = None,
    quantize: bool = False,
    work_dir: Path | None = None,
    cache_dir: Path | None = None,
    build_graph: Callable[[Path], bytes] | None = None,
) -> OnnxEmbedder:
    """Load the pinned all-MiniLM-L6-v2 model (about 1 s); raise ``ModelUnavailable``.

    ``threads`` sets onnxruntime's intra-op threads (None: its default, one per core).
    ``model_dir`` skips the package lookup but is still checksum-verified.
    ``quantize`` runs an int8 copy of the model: faster, slightly different vectors (so a
    different ``model_id``); measured in docs/benchmarks.md, not the default. Making it
    needs a scratch folder: ``work_dir`` (None: the system's temporary folder).
    ``cache_dir`` keeps the built graph for the next load (see ``graph_cache``);
    ``build_graph`` builds one where none is kept (see ``open_mapped_session``).
    """
    started = time.perf_counter()
    kept = None if quantize or cache_dir is None else kept_graph(cache_dir, graph_key(MODEL_SHA256))
    candidate = model_dir if model_dir is not None else first_candidate()
    loaded = None
    if kept is not None and candidate is not None:
        # A graph kept by an earlier start: the session opens from it while the weights'
        # checksum (0.1-0.2 s) is computed beside it, and both are dropped if it fails
        # (then the load below looks for the model as if no graph were kept).
        loaded = while_verifying(candidate, lambda: _open_kept(candidate, kept, threads))
        if loaded is not None:
            model_dir = candidate
    from_kept = loaded is not None
    if loaded is None:
        model_dir = find_model_dir() if model_dir is None else verify_model_dir(model_dir)
        tokenizer = load_tokenizer(model_dir)
        session = _create_session(model_dir, threads, quantize, work_dir, cache_dir, build_graph)
        loaded = tokenizer, session
    tokenizer, session = loaded
    trim_heap()  # the graph's bytes and the session's set-up are garbage now
    logger.info(
        "loaded %s from %s in %.2f s%s",
        MODEL_ID,
        model_dir,
        time.perf_counter() - started,
        " (from the kept graph)" if from_kept else "",
    )
    model_id = f"{MODEL_ID}{INT8_SUFFIX}" if quantize else MODEL_ID
    return OnnxEmbedder(session, tokenizer, model_id=model_id, batch_size=batch_size)


def _open_kept(
    model_dir: Path, graph: bytes, threads: int | None
) -> tuple[Tokenizer, onnxruntime.InferenceSession]:
    return load_tokenizer(model_dir), open_graph_session(model_dir, graph, session_options(threads))
