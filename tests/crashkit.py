"""Kill a reindex with SIGKILL at random instants and check what it leaves behind.

Shared by the test suite (a few dozen kills) and ``scripts/crash_kill.py`` (hundreds).
Documents are versioned: each write of a file is remembered, so a check can tell
whether a file's chunks are entirely one version of it.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.local.catalog import INDEX_VERSION, Catalog, version_of
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.local.layout import ensure_folder
from micro_rag_mcp.local.rebuild import REBUILD
from micro_rag_mcp.local.vectors.store import VectorStore
from micro_rag_mcp.text.chunking import chunk_text
from tests.fakes import FakeEmbedder
from tests.lanes import require_slow

REPO = Path(__file__).resolve().parent.parent
CHUNK_SIZE, CHUNK_OVERLAP = 200, 40
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]

CHILD = """
import sys
from pathlib import Path
from micro_rag_mcp.local.engine import Engine
from tests.crashkit import settings_for, slow_embedder
eng = Engine(settings_for(Path(sys.argv[1])), slow_embedder, save_every_s=0.02)
eng.load_model()
print("go", flush=True)
eng.reindex(force=sys.argv[2] == "force")
print("done", flush=True)
"""


def settings_for(data: Path) -> Settings:
    return Settings(
        data_folder=data,
        index_folder=data / "index",
        chunk_size=CHUNK_SIZE,
        chunk_overlap=CHUNK_OVERLAP,
    )


def slow_embedder() -> FakeEmbedder:
    # A pass embeds only the text that changed (vectors are keyed by their text): about 20
    # chunks after a mutation. At 30 ms each the pass lasts past most kill instants below,
    # however fast the machine, since the delay is a sleep.
    return FakeEmbedder(delay_per_text=0.03)


@dataclass
class Folder:
    """A data folder whose every write is remembered."""

    root: Path
    rng: random.Random
    history: dict[str, set[str]] = field(default_factory=dict)
    serial: int = 0

    def write(self, rel: str) -> None:
        self.serial += 1
        words = [self.rng.choice(WORDS) for _ in range(self.rng.randint(20, 260))]
        text = f"{rel} version {self.serial}. " + " ".join(words) + f" end{self.serial}.\n"
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        self.history.setdefault(rel, set()).add(text)

    def existing(self) -> list[str]:
        return sorted(r for r in self.history if (self.root / r).exists())

    def mutate(self, n: int) -> None:
        """Add, change and delete about n files."""
        for _ in range(n):
            present = self.existing()
            roll = self.rng.random()
            if roll < 0.4 or len(present) < 5:
                self.write(f"d{self.rng.randint(0, 9)}/f{self.serial}.txt")
            elif roll < 0.8:
                self.write(self.rng.choice(present))
            else:
                (self.root / self.rng.choice(present)).unlink()


def populate(root: Path, seed: int, files: int = 100) -> Folder:
    folder = Folder(root, random.Random(seed))
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        folder.write(f"d{i % 10}/f{i}.txt")
    return folder


def kill_during_reindex(
    folder: Folder, delay: float, mutations: int = 6, force: bool = False
) -> bool:
    """Start a reindex in a child, change files while it runs, SIGKILL it after delay.

    Returns True if the child was killed before it finished.
    """
    require_slow("the crash harness")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(folder.root), "force" if force else "changes"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert child.stdout is not None
    child.stdout.readline()  # "go": imports and model done, reindex starting
    started = time.monotonic()
    folder.mutate(mutations // 2)
    time.sleep(max(0.0, delay - (time.monotonic() - started)))
    folder.mutate(mutations - mutations // 2)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    return child.returncode == -signal.SIGKILL and b"done" not in child.stdout.read()


@dataclass
class Verdict:
    opened: bool = True
    mixed_files: list[str] = field(default_factory=list)
    ghost_hits: list[str] = field(default_factory=list)
    dangling: int = 0  # vectors without chunks or chunks without vectors after reconcile
    diverged: bool = False
    unfinished: bool = False  # after the repair: another version, or a rebuild left beside

    @property
    def ok(self) -> bool:
        return (
            self.opened
            and not self.mixed_files
            and not self.ghost_hits
            and not self.dangling
            and not self.diverged
            and not self.unfinished
        )


def chunks_by_file(index: Path) -> dict[str, list[tuple[int, int, int, str]]]:
    conn = sqlite3.connect(index / "catalog.sqlite3")
    out: dict[str, list[tuple[int, int, int, str]]] = {}
    for path, idx, start, end, text in conn.execute(
        "SELECT f.path, c.chunk_index, c.char_start, c.char_end, c.text FROM chunks c "
        "JOIN files f ON f.id = c.file_id ORDER BY f.path, c.chunk_index"
    ):
        out.setdefault(path, []).append((idx, start, end, text))
    conn.close()
    return out


def is_whole_version(chunks: list[tuple[int, int, int, str]], versions: set[str]) -> bool:
    got = [(i, s, e, t) for i, s, e, t in chunks]
    for text in versions:
        want = [
            (c.index, c.start, c.end, c.text) for c in chunk_text(text, CHUNK_SIZE, CHUNK_OVERLAP)
        ]
        if got == want:
            return True
    return False


def check(folder: Folder) -> Verdict:
    """Everything the properties promise about an index left by a kill."""
    verdict = Verdict()
    index = folder.root / "index"
    if not _intact(index / "catalog.sqlite3"):  # of this version or the one rebuilt
        verdict.opened = False
        return verdict
    stored = chunks_by_file(index)
    verdict.mixed_files = [
        p
        for p, chunks in stored.items()
        if not is_whole_version(chunks, folder.history.get(p, set()))
    ]
    # Search before any repair: every hit is a chunk the catalog holds now.
    eng = Engine(settings_for(folder.root), FakeEmbedder)
    eng.load_model()
    for word in WORDS[:4]:
        for hit in eng.search(word, top_k=50, score_threshold=0.0).hits:
            if hit.chunk.path not in stored:
                verdict.ghost_hits.append(hit.chunk.path)
    # Repair and converge: the next reindex equals a clean build of the same folder.
    eng.reindex()
    verdict.unfinished = (
        version_of(index / "catalog.sqlite3") != INDEX_VERSION or (index / REBUILD).exists()
    )
    verdict.dangling = _dangling(index)
    clean_root = folder.root.parent / f"{folder.root.name}-clean"
    shutil.rmtree(clean_root, ignore_errors=True)
    shutil.copytree(folder.root, clean_root, ignore=shutil.ignore_patterns("index"))
    clean = Engine(settings_for(clean_root), FakeEmbedder)
    clean.load_model()
    clean.reindex()
    verdict.diverged = chunks_by_file(index) != chunks_by_file(clean_root / "index")
    verdict.ghost_hits += [
        h.chunk.path
        for h in eng.search(" ".join(WORDS), top_k=50, score_threshold=0.0).hits
        if not (folder.root / h.chunk.path).exists()
    ]
    shutil.rmtree(clean_root, ignore_errors=True)
    return verdict


def _intact(catalog: Path) -> bool:
    try:
        if version_of(catalog) is None:  # killed before it was made: it is made now,
            ensure_folder(catalog.parent)  # in a folder made ours first, as the writer does
            Catalog.open(catalog, check=True).close()
        conn = sqlite3.connect(catalog)
        try:
            return bool(conn.execute("PRAGMA quick_check").fetchone()[0] == "ok")
        finally:
            conn.close()
    except Exception:
        return False


def _dangling(index: Path) -> int:
    conn = sqlite3.connect(index / "catalog.sqlite3")
    chunk_keys = {int(r[0]) for r in conn.execute("SELECT vkey FROM chunks")}
    conn.close()
    vector_ids = {int(i) for i in VectorStore.load(index / "faiss.index", 64).ids()}
    return len(chunk_keys ^ vector_ids)


def run_kills(root: Path, instants: int, seed: int) -> tuple[int, int, list[str]]:
    """Kill ``instants`` reindexes at random moments; return (killed, failed checks, reasons)."""
    rng = random.Random(seed)
    folder = populate(root, seed)
    killed = failures = 0
    reasons: list[str] = []
    for i in range(instants):
        folder.mutate(rng.randint(5, 40))
        force = rng.random() < 0.5
        if kill_during_reindex(folder, delay=rng.uniform(0.0, 0.6), force=force):
            killed += 1
        verdict = check(folder)
        if not verdict.ok:
            failures += 1
            reasons.append(f"instant {i}: {verdict}")
    return killed, failures, reasons


def age(index: Path) -> None:
    """Make the index look as another release's (same tables, another version)."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'index_version'")
    conn.commit()
    conn.close()


def run_rebuild_kills(root: Path, instants: int, seed: int) -> tuple[int, int, list[str]]:
    """Like ``run_kills``, each reindex rebuilding an index of another version (the one
    left by the check before it, aged): kills land in the rebuild and in its swap."""
    rng = random.Random(seed)
    folder = populate(root, seed)
    first = Engine(settings_for(root), FakeEmbedder)
    first.load_model()
    first.reindex()
    first.stop()
    killed = failures = 0
    reasons: list[str] = []
    for i in range(instants):
        folder.mutate(rng.randint(5, 40))
        age(root / "index")
        if kill_during_reindex(folder, delay=rng.uniform(0.0, 0.6)):
            killed += 1
        verdict = check(folder)
        if not verdict.ok:
            failures += 1
            reasons.append(f"instant {i}: {verdict}")
    return killed, failures, reasons
