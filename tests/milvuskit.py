"""A milvus-lite gRPC server for the tests, and a store worker that halts where it is told.

``MilvusServer`` runs ``milvus-lite server`` as a real subprocess on a free port, the way
CI runs it, and waits (with a deadline, by polling) until a client gets an answer.
``HALTING_WORKER`` indexes a folder into a store and stops dead at a chosen step of a
file's write (for the kill test): it prints ``halted`` and waits to be killed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from micro_rag_mcp.core.address import StoreConfig, parse_store_url
from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.milvus.engine import MilvusEngine
from tests.fakes import FakeEmbedder
from tests.waiting import eventually

REPO = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 60.0
# The server's allocators, set to hand freed memory back (what CI and the benchmarks run).
# milvus-lite is one Python process: with glibc's default of one malloc arena per thread
# (its gRPC pool has 16), Arrow's own mimalloc pool, and a mmap threshold that rises after
# each large free, it kept about as much freed memory as live data (docs/benchmarks.md,
# "Scale, synthetic"). One pool and two arenas, large blocks mapped and unmapped.
ALLOCATOR_ENV = {
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "MALLOC_ARENA_MAX": "2",
    "MALLOC_MMAP_THRESHOLD_": "131072",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MilvusServer:
    """``milvus-lite server`` in a subprocess, its data in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.log = folder / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        exe = Path(sys.executable).with_name("milvus-lite")
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [str(exe), "server", "--data-dir", str(self.folder / "data")]
                + ["--host", "127.0.0.1", "--port", str(self.port), "--max-workers", "16"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **ALLOCATOR_ENV},
            )
        self._wait_ready()

    def _wait_ready(self) -> None:
        from pymilvus import MilvusClient

        from micro_rag_mcp.milvus.collections import GRPC_OPTIONS

        failure: list[BaseException] = []

        def answers() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"milvus-lite exited: {self.log.read_text()[-2000:]}")
            try:
                client = MilvusClient(
                    uri=f"http://127.0.0.1:{self.port}", timeout=2, grpc_options=GRPC_OPTIONS
                )
                client.list_collections()
                client.close()
            except Exception as e:  # not listening yet
                failure[:] = [e]
                return False
            return True

        eventually(answers, lambda: f"milvus-lite answers; last {failure}", READY_TIMEOUT_S, 0.1)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def url(self, collection: str | None = None) -> str:
        name = collection or f"c{uuid.uuid4().hex[:12]}"
        return f"milvus://127.0.0.1:{self.port}/default?collection={name}"

    def config(self, collection: str | None = None, **kw: object) -> StoreConfig:
        from dataclasses import replace

        return replace(parse_store_url(self.url(collection)), **kw)  # type: ignore[arg-type]


def store_engine(
    data: Path,
    config: StoreConfig,
    embedder: FakeEmbedder | None = None,
    clock: Callable[[], float] = time.monotonic,
    **settings: object,
) -> MilvusEngine:
    """A store engine over ``data`` with the fake embedder, its model loaded."""
    made = embedder or FakeEmbedder()
    engine = MilvusEngine(
        Settings(data_folder=data, index_folder=data / "index", **settings),  # type: ignore[arg-type]
        lambda: made,
        config,
        folder=data,
        clock=clock,
    )
    engine.load_model()
    return engine


# argv: data folder, store URL, step ("after-intent", "mid-insert", "after-insert",
# "after-flip"), n, batch
HALTING_WORKER = """
import sys
from pathlib import Path
from micro_rag_mcp.milvus.index import MilvusIndex
from micro_rag_mcp.core.address import parse_store_url
from tests.milvuskit import store_engine

data, url, step, n, batch = Path(sys.argv[1]), sys.argv[2], sys.argv[3], *map(int, sys.argv[4:])
seen = {"intent": 0, "insert": 0, "flip": 0}
inserted = [False]  # since the last flip

def halt():
    print("halted", flush=True)
    sys.stdin.read()  # held here until the test kills it (or closes stdin)
    sys.exit(3)

insert, put = MilvusIndex.insert_chunks, MilvusIndex.put_files

def halting_insert(self, rows):
    seen["insert"] += 1
    inserted[0] = True
    if step == "mid-insert" and seen["insert"] == n:
        insert(self, rows[: len(rows) // 2])
        halt()
    ids = insert(self, rows)
    if step == "after-insert" and seen["insert"] == n:
        halt()
    return ids

def halting_put(self, files):
    put(self, files)
    if inserted[0]:  # the flip that follows an insert
        inserted[0] = False
        seen["flip"] += 1
        if step == "after-flip" and seen["flip"] == n:
            halt()
    elif all(f.previous for f in files):  # a write's intent (a clearing has none)
        seen["intent"] += 1
        if step == "after-intent" and seen["intent"] == n:
            halt()

MilvusIndex.insert_chunks, MilvusIndex.put_files = halting_insert, halting_put
engine = store_engine(data, parse_store_url(url), chunk_size=200, chunk_overlap=40)
engine.batch_chunks = batch
engine.reindex()
print("done", flush=True)
"""


def run_halting_worker(data: Path, url: str, step: str, n: int, batch: int) -> None:
    """Run the worker until it halts at ``step`` number ``n``, then kill it with SIGKILL."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO / "src"), str(REPO)))}
    log = data.parent / "worker.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", HALTING_WORKER, str(data), url, step, str(n), str(batch)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            cwd=REPO,
        )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode().strip()  # blocks until halted (or done)
        assert line == "halted", f"no halt at {step} {n}: {line!r} {log.read_text()[-1500:]}"
    finally:
        proc.kill()
        proc.wait()
