from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.local.engine import Engine
from tests.fakes import FakeEmbedder

if TYPE_CHECKING:
    from tests.milvuskit import MilvusServer

# Modules whose tests start the real model, subprocesses, milvus-lite, the real watcher or
# the crash harness: marked ``slow``, so ``pytest -m "not slow"`` is the quick inner loop.
SLOW_MODULES = frozenset(
    {
        "test_at_work",
        "test_cli",
        "test_crash",
        "test_disk_full",
        "test_e2e_stdio",
        "test_embedder",
        "test_graph_cache",
        "test_hostile_files",
        "test_milvus",
        "test_milvus_documents",
        "test_new_formats_indexed",
        "test_notifications",
        "test_ocr",
        "test_service",
        "test_shutdown",
        "test_stdio_bounds",
        "test_terminal",
        "test_two_processes",
        "test_watch",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.module is not None and item.module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


# The Ctrl+C tests send SIGINT as a terminal would. A suite started as a background job of
# a non-interactive shell inherits SIGINT ignored, and so would every process it starts
# (an ignored signal stays ignored across exec): give this process Python's own handler,
# which exec resets to the default in the servers and commands the tests start.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# Launches serve in one process unless MICRO_RAG_TEST_MODE=service: then every launch a
# test makes goes through the service (the whole suite in the service's mode).
SERVICE_MODE = os.environ.get("MICRO_RAG_TEST_MODE", "standalone") == "service"


@pytest.fixture(autouse=True)
def service_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's own runtime directory for the service (parallel workers never share
    one), a service that exits as its last session ends, and the launch mode of the run;
    any service still running at the end is stopped."""
    root = Path(tempfile.mkdtemp(prefix="mrr-"))  # short: a socket's path is limited
    monkeypatch.setenv("MICRO_RAG_RUNTIME_DIR", str(root))
    monkeypatch.setenv("MICRO_RAG_SERVICE_GRACE", "0")
    if SERVICE_MODE:
        monkeypatch.delenv("MICRO_RAG_STANDALONE", raising=False)
    else:
        monkeypatch.setenv("MICRO_RAG_STANDALONE", "1")
    yield root
    for pid_file in root.glob("*/service.pid"):
        stop_service(int(pid_file.read_text()))
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def standalone(monkeypatch: pytest.MonkeyPatch, service_runtime: Path) -> None:
    """Launches serve in one process whatever the suite's mode: for tests of that process
    itself (its log on stderr, its signals, its memory, two of them side by side)."""
    monkeypatch.setenv("MICRO_RAG_STANDALONE", "1")


@pytest.fixture(params=["standalone", "service"])
def launch_mode(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, service_runtime: Path
) -> str:
    """Run a spine test both ways: each launch in one process, and through the service."""
    if request.param == "service":
        monkeypatch.delenv("MICRO_RAG_STANDALONE", raising=False)
    else:
        monkeypatch.setenv("MICRO_RAG_STANDALONE", "1")
    return str(request.param)


def stop_service(pid: int, timeout: float = 30.0) -> None:
    """Ask the service ``pid`` to stop (if that process is still a service), and kill it
    if it has not within ``timeout`` seconds."""
    try:
        if b"micro_rag_mcp.service" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not _ended(pid):
            time.sleep(0.02)
        if not _ended(pid):
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, FileNotFoundError):
        return


def _ended(pid: int) -> bool:
    """Whether ``pid`` has ended (reaped here if it was a child of this process)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def fail_listing(monkeypatch: pytest.MonkeyPatch, folder_name: str) -> None:
    """Make listing any folder called ``folder_name`` fail with an I/O error."""
    real = os.scandir

    def flaky(path: str) -> object:
        if os.path.basename(str(path)) == folder_name:
            raise OSError(5, "Input/output error")
        return real(path)

    monkeypatch.setattr(os, "scandir", flaky)


DEADLINE_S = 30.0


def eventually(
    condition: Callable[[], bool], what: str = "the condition", timeout: float = DEADLINE_S
) -> None:
    """Poll ``condition`` until it holds; fail, naming ``what``, after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"within {timeout:g} s: {what}"
        time.sleep(0.01)


def make_settings(data: Path, **kw: object) -> Settings:
    """Settings for a test folder; the folder is not watched unless ``watch`` says so."""
    kw.setdefault("watch", "off")
    kw.setdefault("index_folder", data / "index")
    return Settings(data_folder=data, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def milvus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusServer]:
    """One real milvus-lite server for a module's tests, each in a collection of its own."""
    from tests.milvuskit import MilvusServer

    server = MilvusServer(tmp_path_factory.mktemp("milvus"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    return folder


@pytest.fixture
def engine(data: Path) -> Iterator[Engine]:
    """An engine with the fake embedder, model loaded, no background start-up."""
    eng = Engine(make_settings(data), FakeEmbedder)
    eng.load_model()
    yield eng
    eng.stop()
