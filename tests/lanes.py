"""The fast lane and the slow one: what only a test marked ``slow`` may start.

A module whose tests start the real model, the server or the CLI as a process, milvus-lite,
the real watcher or the crash harness says ``pytestmark = pytest.mark.slow`` (or marks
those tests one by one), so ``pytest -m "not slow"`` stays the quick inner loop. The mark
is checked, not trusted: ``conftest.py`` records the running test here; an audit hook
sees every process started (the server, the CLI, milvus-lite, the model's graph builder)
and every opening of the model's weights; the crash kit and ``make_settings`` (a watched
folder) call ``require_slow``. A test that is not marked and starts one of them fails with
the reason, in whichever lane it runs.

The reader child that every indexing pass starts (``micro_rag_mcp.ingest.isolation``) and
the short ``python -c`` helpers some tests run (a lock holder, a writer) are not slow.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import pytest

# The test being run (setup, call and teardown), set by conftest.py; None between tests.
running: pytest.Item | None = None
# What a test not marked slow started (its node id, what): the audit hook may fire in a
# thread whose exception nobody reads, so the report of the test's call checks this too.
offences: list[tuple[str, str]] = []

MODEL_WEIGHTS = "model.safetensors"
READER_CHILD = "micro_rag_mcp.ingest.isolation"


def require_slow(what: str) -> None:
    """Fail the running test, naming ``what``, unless it is marked ``slow``."""
    item = running
    if item is None or item.get_closest_marker("slow") is not None:
        return
    offences.append((item.nodeid, what))
    pytest.fail(
        f"{item.nodeid} starts {what} but is not marked slow: give its module "
        "`pytestmark = pytest.mark.slow` or the test `@pytest.mark.slow`",
        pytrace=False,
    )


def slow_process(argv: Sequence[object]) -> str | None:
    """What the command ``argv`` starts if only a slow test may start it, else None."""
    words = [os.fsdecode(w) if isinstance(w, (str, bytes, os.PathLike)) else "" for w in argv]
    if not words:
        return None
    name = os.path.basename(words[0])
    if name.startswith("micro-rag"):
        return f"the command {name}"
    if name in ("milvus-lite", "milvus"):
        return "milvus-lite"
    for flag, module in zip(words, words[1:], strict=False):
        if flag == "-m" and module.startswith("micro_rag_mcp") and module != READER_CHILD:
            return f"a process of {module}"
    return None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if running is None:
        return
    if event == "subprocess.Popen":
        argv = args[1]
        what = slow_process(argv if isinstance(argv, (list, tuple)) else [args[0]])
        if what is not None:
            require_slow(what)
    elif event == "open" and _names(args[0], MODEL_WEIGHTS):
        require_slow("the real model")


def _names(path: object, name: str) -> bool:
    """Whether ``path`` (a path, or the file descriptor ``os.open`` may get) ends in ``name``."""
    return (
        isinstance(path, (str, bytes, os.PathLike)) and os.path.basename(os.fsdecode(path)) == name
    )


def install() -> None:
    """Watch this process's new processes and opened files (an audit hook stays for the
    life of the process: conftest.py calls this once, when it is imported)."""
    sys.addaudithook(_audit)
