"""How much of the encoder a first index's steps waste on padding, by how steps are formed.

    .venv/bin/python -m bench.padding --realdocs ../shared/eval/realdocs \
        --sec10q ../shared/eval/sec10q_dev

A step is one batch, padded to its longest member in tokens; its cost is taken as its
size times that length (the encoder's work grows with it). Each way of forming steps is
given as that cost over the tokens the chunks hold (1.00: no padding at all): the encoder
alone (all chunks sorted, batches of 32) against steps taken from windows of chunks in
the order of storing, ordered by characters or by tokens. Counted, not timed: the machine's
load does not enter. The chunks are a keyword-only index of each folder, made under
``--work``.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench import work_folder

WINDOWS = (16, 128, 512, 1024, 2048)
STEPS = (16, 32)


def chunk_texts(folder: Path, index: Path) -> list[str]:
    """What a first index of ``folder`` embeds, chunk by chunk in the order of storing."""
    from micro_rag_mcp.core.errors import ModelUnavailable
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.local.engine import Engine
    from micro_rag_mcp.text.vector_text import embedding_text

    def no_model() -> object:
        raise ModelUnavailable("keyword only")

    shutil.rmtree(index, ignore_errors=True)
    settings = Settings(data_folder=folder, index_folder=index, watch="off")
    engine = Engine(settings, no_model)  # type: ignore[arg-type]
    engine.reindex()
    engine.stop()
    conn = sqlite3.connect(index / "catalog.sqlite3")
    rows = conn.execute("SELECT title, text FROM chunks ORDER BY id").fetchall()
    conn.close()
    return [embedding_text(title, text) for title, text in rows]


def cost(tokens: npt.NDArray[np.int64], steps: Sequence[npt.NDArray[np.intp]]) -> float:
    """Padded tokens over the chunks' own tokens."""
    return sum(len(s) * int(tokens[s].max()) for s in steps) / int(tokens.sum())


def windowed(key: npt.NDArray[np.int64], window: int, step: int) -> list[npt.NDArray[np.intp]]:
    """Steps as the pass takes them: windows in the order of storing, each ordered by
    ``key``, steps taken from its end."""
    steps = []
    for start in range(0, len(key), window):
        ids = np.arange(start, min(start + window, len(key)))
        ids = ids[np.argsort(key[ids], kind="stable")][::-1]
        steps += [ids[i : i + step] for i in range(0, len(ids), step)]
    return steps


def report(name: str, texts: list[str]) -> None:
    from micro_rag_mcp.model.embedder import load_embedder

    tokens = np.array(load_embedder(threads=1).token_counts(texts), dtype=np.int64)
    chars = np.array([len(t) for t in texts], dtype=np.int64)
    alone = np.argsort(-tokens, kind="stable")
    batches = [alone[i : i + 32] for i in range(0, len(alone), 32)]
    print(f"\n{name}: {len(texts)} chunks, tokens mean {tokens.mean():.0f}")
    print("| steps | by characters | by tokens |\n| --- | ---: | ---: |")
    print(f"| encoder alone: all sorted, batches of 32 | | {cost(tokens, batches):.3f} |")
    for window in WINDOWS:
        for step in STEPS:
            by_chars = cost(tokens, windowed(chars, window, step))
            by_tokens = cost(tokens, windowed(tokens, window, step))
            print(f"| {step} from windows of {window} | {by_chars:.3f} | {by_tokens:.3f} |")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--realdocs", type=Path)
    p.add_argument("--sec10q", type=Path)
    p.add_argument("--work", type=Path, default=work_folder("padding"))
    args = p.parse_args(argv)
    for name, folder in (("realdocs", args.realdocs), ("sec10q_dev", args.sec10q)):
        if folder is not None:
            report(name, chunk_texts(folder, args.work / name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
