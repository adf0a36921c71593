"""Giving freed memory back to the system, so an idle server is as small as it can be.

glibc's allocator keeps freed memory in its heaps for the next allocation; after the
large transient allocations of an indexing pass that memory is counted against the
process until ``malloc_trim`` hands it back. Elsewhere (macOS, musl) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def trim_heap() -> None:
    """Return the C heap's free pages to the system (glibc); a no-op elsewhere."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
