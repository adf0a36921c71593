"""Log lines that stay one line: control characters in a message are shown escaped.

A file name may hold a newline or a terminal escape; logged raw, it splits one line into
two (a forged log line) or drives the terminal. Messages are escaped as Python writes
them in a string literal (``\\n``, ``\\x1b``); tracebacks keep their own lines.
"""

from __future__ import annotations

import logging
import re
import sys

_CONTROL = re.compile(r"[\x00-\x1f\x7f\x80-\x9f\u2028\u2029]")


def escape_controls(text: str) -> str:
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class OneLineFormatter(logging.Formatter):
    """A ``logging.Formatter`` whose messages cannot span lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        record.message = escape_controls(record.message)
        return super().formatMessage(record)


def log_to_stderr(line: str, level: int) -> None:
    """Every log line to stderr (stdout may be a protocol) as ``line`` formats it, one line
    each: the package's at ``level``, other libraries' from warnings up (pymilvus's not
    at all: the store's errors say what failed)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(line))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("micro_rag_mcp").setLevel(level)
    # pymilvus logs every failed call with its traceback at ERROR; ours says it once.
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
