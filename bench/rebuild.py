"""What rebuilding an index of another version costs, beside a first index of the folder.

    PYTHONPATH=src .venv/bin/python -m bench.rebuild ../shared/eval/cisi --docs 300

The first ``--docs`` documents of a corpus (``corpus.jsonl``) are written as text files,
indexed with the real model, the index is made to look as another release's (its
``index_version`` set to 4), and the next pass rebuilds it beside itself. Printed: each
pass's time and how many texts the model embedded (the rebuild reuses every vector).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path

from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.model.handle import model_loader


class Counting:
    """The real model, counting the texts it embeds."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.embedded = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def embed_documents(self, texts: list[str]) -> object:
        self.embedded += len(texts)
        return self.inner.embed_documents(texts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("corpus", type=Path, help="a folder holding corpus.jsonl")
    ap.add_argument("--docs", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "docs"
        data.mkdir()
        with (args.corpus / "corpus.jsonl").open() as f:
            for n, line in zip(range(args.docs), f, strict=False):
                doc = json.loads(line)
                (data / f"d{n:05d}.txt").write_text(f"{doc.get('title', '')}\n\n{doc['text']}")
        settings = Settings(
            data_folder=data, index_folder=data / "index", watch="off", model="minilm"
        )
        model = Counting(model_loader(settings)())
        for what in ("first index", "rebuild"):
            if what == "rebuild":
                conn = sqlite3.connect(data / "index" / "catalog.sqlite3")
                conn.execute("UPDATE meta SET value = '4' WHERE key = 'index_version'")
                conn.commit()
                conn.close()
            eng = Engine(settings, lambda: model)  # type: ignore[arg-type,return-value]
            eng.load_model()
            before, started = model.embedded, time.perf_counter()
            report = eng.reindex()
            took = time.perf_counter() - started
            eng.stop()
            print(
                f"{what}: {report.files_added} files, {report.chunks_total} chunks, "
                f"{model.embedded - before} texts embedded, {took:.1f} s"
            )


if __name__ == "__main__":
    main()
