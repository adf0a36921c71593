"""``--model auto``: the signal it reads per collection, and what it costs to index.

    PYTHONPATH=src .venv/bin/python -m bench.auto_model --eval /path/to/eval \\
        [--docs 150] [--time scifact xquad_r_de] [--models auto minilm]

Signal: for each dev collection, the documents in corpus order (title line, then text,
as a note), sampled as the first pass samples a folder (``model.choice.Sample``: the
opening 4,000 characters of each file, 32,000 in all): its foreign share
(``text.language.foreign_share``) and the encoder it chooses.

Cost: the first ``--docs`` documents of each ``--time`` collection written as text
files, indexed by a fresh child process (a real engine, the model loaded as a server
loads it, the graph built in the index folder) with each ``--models`` value in turn:
the CPU time of the child and its reader process (user + system), and the wall time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from micro_rag_mcp.model.choice import Sample

COLLECTIONS = (
    "scifact",
    "cranfield",
    "cisi",
    "vaswani",
    "cosqa_dev",
    "sec10q_dev",
    "xquad_r_de",
    "jaquad",
    "lecard_dev",
)


def documents(folder: Path) -> Iterator[tuple[str, str]]:
    """(id, text as a note) of each document of a collection, in corpus order."""
    path = folder / "corpus.jsonl"
    if not path.exists():
        path = folder / "corpus.jsonl.gz"
    if not path.exists():
        return
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            title = doc.get("title") or ""
            yield str(doc["_id"]), f"{title}\n\n{doc['text']}" if title else doc["text"]


def signal(folder: Path) -> tuple[str, float, int, int] | None:
    """The encoder, foreign share, characters and files of a collection's sample."""
    sample = Sample()
    files = 0
    for doc_id, text in documents(folder):
        sample.add(doc_id, text)
        files += 1
        if sample.full:
            break
    if not files:
        return None
    encoder, share = sample.choice()
    return encoder, share, sample.chars, files


def index_once(data: Path, model: str) -> None:
    """Index ``data`` with a real engine and ``--model model`` (run in a child)."""
    from micro_rag_mcp.core.settings import Settings
    from micro_rag_mcp.local.engine import Engine
    from micro_rag_mcp.model.handle import model_loader

    settings = Settings(
        data_folder=data,
        index_folder=data / "index",
        watch="off",
        model=model,  # type: ignore[arg-type]
    )
    engine = Engine(settings, model_loader(settings, keep_files=True))
    try:
        report = engine.reindex()
        summary = engine.status()
    finally:
        engine.stop()
    print(json.dumps({"chunks": report.chunks_total, "vector_model": summary.vector_model}))


def timed(folder: Path, docs: int, model: str, work: Path) -> dict[str, object]:
    data = work / f"{folder.name}-{model}"
    data.mkdir()
    for n, (_, text) in zip(range(docs), documents(folder), strict=False):
        (data / f"d{n:05d}.txt").write_text(text + "\n", encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "bench.auto_model", "--index-one", str(data), "--model", model],
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    made = json.loads(out.stdout.strip().splitlines()[-1])
    return {"cpu_s": cpu, "wall_s": wall, **made}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--eval", type=Path, default=Path("../shared/eval"))
    ap.add_argument("--docs", type=int, default=150)
    ap.add_argument("--time", nargs="*", default=["scifact"], help="collections to index")
    ap.add_argument("--models", nargs="+", default=["auto", "minilm"])
    ap.add_argument("--index-one", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--model", default="auto", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.index_one is not None:
        index_once(args.index_one, args.model)
        return
    print("| collection | foreign share | auto chooses | characters sampled | files |")
    print("| --- | ---: | --- | ---: | ---: |")
    for name in COLLECTIONS:
        found = signal(args.eval / name)
        if found is None:
            continue
        encoder, share, chars, files = found
        print(f"| {name} | {share:.3f} | {encoder} | {chars:,} | {files:,} |")
    if not args.time:
        return
    print()
    print(f"| collection ({args.docs} docs) | --model | encoder | CPU s | wall s | chunks |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory(prefix="auto-model-") as tmp:
        for name in args.time:
            for model in args.models:
                got = timed(args.eval / name, args.docs, model, Path(tmp))
                space = str(got["vector_model"]).split("@")[0]
                print(
                    f"| {name} | {model} | {space} | {got['cpu_s']:.1f} | "
                    f"{got['wall_s']:.1f} | {got['chunks']} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
