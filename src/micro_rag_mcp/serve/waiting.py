"""A reindex that meets another process's pass waits for it, as it waits within one process.

Two servers (or a server and ``micro-rag index``) on one index take turns on its lock; a
client's ``reindex`` that found the other's pass holding it was refused as busy, though
the same request within one process joins or queues. Here it waits, its progress saying
what for (``OTHER_PROCESS``), and runs once the other lets go; the server's job answers
the call within its time as for any pass (``jobs``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from micro_rag_mcp.core.errors import IndexBusy
from micro_rag_mcp.core.results import Progress, ProgressFn, ReindexReport
from micro_rag_mcp.store import Store

logger = logging.getLogger(__name__)

OTHER_PROCESS = "other process's"  # ``Progress.waiting_for`` while another process writes
WAIT_POLL_S = 0.25


def reindex_waiting(
    store: Callable[[], Store],
    force: bool,
    path_glob: str | None,
    progress: ProgressFn,
    poll_s: float = WAIT_POLL_S,
) -> ReindexReport:
    """``store().reindex``; while another process's pass holds the index, wait for it.

    ``store`` is asked again at every poll: it raises ``Stopped`` once the server stops.
    """
    while True:
        current = store()
        try:
            return current.reindex(force=force, path_glob=path_glob, progress=progress)
        except IndexBusy as e:
            if not current.written_elsewhere():
                raise
            logger.info("reindex waits for another process: %s", e)
        progress(Progress("reading", 0, 0, waiting_for=OTHER_PROCESS))
        started = time.monotonic()
        while store().written_elsewhere():
            time.sleep(poll_s)
        logger.info("the other process let go after %.1f s", time.monotonic() - started)
