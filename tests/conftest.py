from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from micro_rag_mcp.local.engine import Engine
from tests import lanes
from tests.fakes import FakeEmbedder
from tests.servicekit import stop_service
from tests.settingskit import make_settings

if TYPE_CHECKING:
    from tests.milvuskit import MilvusServer

lanes.install()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    lanes.running = item
    try:
        return (yield)
    finally:
        lanes.running = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[pytest.TestReport]:
    """A test that started what only a slow test may start fails, even where the audit
    hook's failure was raised in a thread of the server and never reached the test."""
    report: pytest.TestReport = yield
    offended = [what for nodeid, what in lanes.offences if nodeid == item.nodeid]
    lanes.offences[:] = [o for o in lanes.offences if o[0] != item.nodeid]
    if offended and report.passed:
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid} starts {offended[0]} but is not marked slow"
    return report


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
