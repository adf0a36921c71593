"""MiniLM's tokenizer in Python against the time to embed: what share it takes.

    PYTHONPATH=src .venv/bin/python -m bench.tokenizer_speed --eval /path/to/eval \\
        [--passages 128] [--rounds 3]

The first ``--passages`` SciFact abstracts, cut to 1,000 characters as chunks are, are
tokenized by a fresh ``BertTokenizer`` (its word cache empty: the cost of a first index),
by the ``tokenizers`` library when it is installed (the test extra), and embedded by the
MiniLM embedder on one thread (tokenizing included). CPU seconds of this process, the
best of ``--rounds``; the share is the Python tokenizer's time over the embedding's.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from micro_rag_mcp.model.bert_tokenizer import BertTokenizer
from micro_rag_mcp.model.embedder import load_embedder
from micro_rag_mcp.model.files import minilm_file, minilm_tokenizer_file
from micro_rag_mcp.model.loader import MAX_SEQ_LENGTH

CHUNK_CHARS = 1000


def passages(eval_dir: Path, count: int) -> list[str]:
    """The first ``count`` SciFact abstracts as title and text, cut to a chunk's length."""
    out = []
    with (eval_dir / "scifact" / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            out.append(f"{doc.get('title', '')}\n{doc['text']}"[:CHUNK_CHARS])
            if len(out) == count:
                break
    return out


def best_cpu(run: Callable[[], object], rounds: int) -> float:
    """The least CPU time of ``rounds`` calls of ``run``."""
    times = []
    for _ in range(rounds):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


def python_tokenizer() -> BertTokenizer:
    chars = minilm_file("chars.json")
    return BertTokenizer.from_files(minilm_tokenizer_file(), chars, MAX_SEQ_LENGTH)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, required=True, help="the dev collections' folder")
    parser.add_argument("--passages", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    texts = passages(args.eval, args.passages)
    ours = best_cpu(lambda: python_tokenizer().encode_batch(texts), args.rounds)
    warm = python_tokenizer()
    warm.encode_batch(texts)
    rows = [
        ("tokenize, Python (fresh word cache)", ours),
        ("tokenize, Python (the same texts again)", best_cpu(lambda: warm.encode_batch(texts), 1)),
    ]
    try:
        from tokenizers import Tokenizer
    except ImportError:
        pass
    else:
        theirs = Tokenizer.from_file(str(minilm_tokenizer_file()))
        theirs.enable_truncation(max_length=MAX_SEQ_LENGTH)
        rust = best_cpu(lambda: theirs.encode_batch(texts), args.rounds)
        rows.append(("tokenize, tokenizers (Rust, its threads included)", rust))
    embedder = load_embedder(threads=1)
    embed = best_cpu(lambda: embedder.embed_documents(texts), args.rounds)
    rows.append(("embed on one thread (tokenizing included)", embed))
    print(f"{len(texts)} SciFact passages of up to {CHUNK_CHARS} characters")
    print("| step | CPU s | ms per passage |\n| --- | ---: | ---: |")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.3f} | {1000 * seconds / len(texts):.2f} |")
    print(f"\nthe Python tokenizer's share of the embedding time: {100 * ours / embed:.2f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
