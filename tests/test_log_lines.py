"""A file name with a newline or an escape sequence cannot split or forge a log line."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from micro_rag_mcp.cli import app as cli
from micro_rag_mcp.serve import main


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.parametrize("configure", [cli.configure_logging, main.configure_logging])
def test_a_name_with_control_characters_is_logged_on_one_line(
    capsys: pytest.CaptureFixture[str], restore_logging: None, configure: object
) -> None:
    configure(0)  # type: ignore[operator]
    name = "notes\n2026-12-01 WARNING forged line\x1b[2J.txt"
    logging.getLogger("micro_rag_mcp.local.passes.indexer").warning(
        "cannot index %s: %s", name, "broken"
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "notes\\n2026-12-01 WARNING forged line\\x1b[2J.txt" in err
