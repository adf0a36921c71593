"""Exact identifiers: does the one file that holds a rare token rank first?

Generates a folder of look-alike incident notes (same template, same vocabulary), each
with its own tokens of the shapes agents search for: an error code (``ERR-4471``), a
ticket number (``INC0012345``), a function name (``parse_config_v2b``) and a surname.
A sample of tokens is searched through ``Engine.search`` with the server's defaults
(``top_k`` 5, ``score_threshold`` 0.2), each alone and inside a sentence; a query passes
when its first hit is the file that holds the token.

    .venv/bin/python -m bench.identifiers --files 300 --tokens 50

The folder is generated from ``--seed``, so every run (and every machine) sees the same
files and queries.

``--vector-shares 0.1,0.5,0.9`` also measures the hybrid search while only that share of
chunks has a vector, as during a first index or a forced pass: for each share, a COPY of
the index keeps the vectors of a random (seeded) share of its chunks and drops the rest.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench import work_folder
from bench.folder_qa import CHANNELS, channel_params, index_folder, params_from, rank_files
from bench.metrics import percentile
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.model.embedder import Embedder, load_embedder
from micro_rag_mcp.search.fusion import SearchParams

logger = logging.getLogger("bench")

SURNAMES = [
    "Kowalczyk",
    "Okonkwo",
    "Halvorsen",
    "Castellanos",
    "Nakamura",
    "Abernathy",
    "Delacroix",
    "Vukovic",
    "Lindqvist",
    "Oyelaran",
    "Pemberton",
    "Szymanski",
    "Takahashi",
    "Ravensworth",
    "Achterberg",
    "Bellweather",
    "Chakrabarti",
    "Dunleavy",
    "Fitzwilliam",
    "Grunewald",
]
SYSTEMS = (
    "the payment service",
    "the nightly export job",
    "the login gateway",
    "the report builder",
    "the search indexer",
    "the billing sync",
)
SENTENCES = {
    "error": "What does error {} mean and how was it fixed?",
    "ticket": "Find the notes for ticket {}",
    "function": "Why did {} fail?",
    "person": "Which incident did {} review?",
}


@dataclass(frozen=True)
class Note:
    name: str
    tokens: dict[str, str]  # kind -> token
    text: str


def make_notes(count: int, rnd: random.Random) -> list[Note]:
    notes = []
    for i in range(count):
        system = rnd.choice(SYSTEMS)
        tokens = {
            "error": f"ERR-{rnd.randint(1000, 9999)}",
            "ticket": f"INC{rnd.randint(10**6, 10**7 - 1)}",
            "function": f"parse_{rnd.choice(['config', 'header', 'record', 'payload'])}"
            f"_v{rnd.randint(2, 9)}{rnd.choice('abcdefgh')}",
            "person": rnd.choice(SURNAMES) + rnd.choice(["son", "ski", "berg", "ova", ""]),
        }
        text = (
            f"Incident notes for {system}\n\n"
            f"During the weekly review the on-call engineer {tokens['person']} looked at an "
            f"outage of {system}. The service logged error {tokens['error']} repeatedly after "
            f"a deploy, and ticket {tokens['ticket']} was opened. The root cause was traced "
            f"to the function {tokens['function']}, which failed to handle an empty field. A "
            "fix was rolled out and monitoring was extended; the team agreed to review "
            "similar handlers. Follow-up actions include adding tests, improving alerts and "
            f"documenting the recovery steps for {system}.\n"
        )
        notes.append(Note(f"notes/incident_{i:03d}.txt", tokens, text))
    return notes


def make_queries(notes: Sequence[Note], count: int, rnd: random.Random) -> list[tuple[str, str]]:
    """(query, the one file that holds its token); tokens held by several files are skipped."""
    holders: dict[str, list[str]] = {}
    for note in notes:
        for token in note.tokens.values():
            holders.setdefault(token, []).append(note.name)
    kinds = list(SENTENCES)
    queries: list[tuple[str, str]] = []
    picked = 0
    for note in rnd.sample(list(notes), len(notes)):
        kind = kinds[picked % len(kinds)]
        token = note.tokens[kind]
        if len(holders[token]) != 1:
            continue
        queries.append((token, note.name))
        queries.append((SENTENCES[kind].format(token), note.name))
        picked += 1
        if picked == count:
            break
    return queries


def write_notes(docs: Path, notes: Sequence[Note]) -> None:
    wanted = {n.name for n in notes}
    for old in docs.rglob("*.txt"):
        if old.relative_to(docs).as_posix() not in wanted:
            old.unlink()
    for note in notes:
        path = docs / note.name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != note.text:
            path.write_text(note.text, encoding="utf-8")


def partial_copy(settings: Settings, share: float, seed: int) -> Settings:
    """Settings of a copy of the index in which only ``share`` of the chunks keep a vector."""
    import faiss
    import numpy as np

    copy = settings.index_folder.with_name(f"{settings.index_folder.name}-vectors-{share:g}")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(settings.index_folder, copy, ignore=shutil.ignore_patterns("*.lock"))
    flat = faiss.read_index(str(copy / "faiss.index"))
    ids = faiss.vector_to_array(flat.id_map)
    rnd = random.Random(seed)
    dropped = np.asarray([i for i in ids.tolist() if rnd.random() >= share], dtype=np.int64)
    flat.remove_ids(dropped)
    faiss.write_index(flat, str(copy / "faiss.index"))
    logger.info("%s: %d of %d vectors kept", copy, flat.ntotal, len(ids))
    return Settings(
        data_folder=settings.data_folder,
        index_folder=copy,
        exts=settings.exts,
        model_wait_s=settings.model_wait_s,
    )


def first_rates(
    settings: Settings, embedder: Embedder, params: SearchParams, queries: Sequence[tuple[str, str]]
) -> tuple[list[bool], list[float]]:
    """Whether each query's first hit is its file, and the latencies."""
    files, lat = rank_files(settings, embedder, params, [q for q, _ in queries], 5, 0.2)
    first = [
        bool(ranked) and ranked[0] == want for ranked, (_, want) in zip(files, queries, strict=True)
    ]
    return first, lat


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.identifiers", description=__doc__.split("\n")[0]
    )
    p.add_argument("--files", type=int, default=300)
    p.add_argument("--tokens", type=int, default=50, help="tokens searched (two queries each)")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--work", type=Path, default=work_folder("identifiers"))
    p.add_argument("--params", help="SearchParams overrides, e.g. vector_share=0.8")
    p.add_argument("--channels", default=",".join(CHANNELS))
    p.add_argument(
        "--vector-shares",
        help="comma list of shares of chunks with a vector (e.g. 0.1,0.5,0.9): also rank "
        "the hybrid search on copies of the index with only that share of vectors",
    )
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
    rnd = random.Random(args.seed)
    notes = make_notes(args.files, rnd)
    queries = make_queries(notes, args.tokens, rnd)
    write_notes(args.work / "docs", notes)
    embedder = load_embedder(threads=len(os.sched_getaffinity(0)))
    settings = index_folder(args.work / "docs", args.work / "index", embedder, (".txt",))
    params = params_from(args.params)
    print(f"\nidentifiers: {len(notes)} files, {len(queries)} queries; params: {params}\n")
    print("| channel | first (alone) | first (in a sentence) | first (all) | p50 ms |")
    print("| --- | ---: | ---: | ---: | ---: |")
    rows = [
        (channel, settings, channel_params(params, channel))
        for channel in [c.strip() for c in args.channels.split(",") if c.strip()]
    ]
    for share in [float(s) for s in (args.vector_shares or "").split(",") if s.strip()]:
        rows.append(
            (f"hybrid, {share:.0%} of vectors", partial_copy(settings, share, args.seed), params)
        )
    for name, where, row_params in rows:
        first, lat = first_rates(where, embedder, row_params, queries)
        alone, sentence = first[0::2], first[1::2]
        print(
            f"| {name} | {sum(alone) / len(alone):.3f} | {sum(sentence) / len(sentence):.3f}"
            f" | {sum(first) / len(first):.3f} | {percentile(lat, 50):.1f} |"
        )
        for ok, (q, want) in zip(first, queries, strict=True):
            if not ok and name.startswith("hybrid"):
                logger.info("%s missed: %r (wanted %s)", name, q, want)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
