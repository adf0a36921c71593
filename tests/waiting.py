"""Waiting in tests: poll a condition until it holds, and fail, saying what never came,
at a deadline. No test sleeps a fixed time; every wait goes through here.

``eventually`` waits in a thread; ``until`` waits in a coroutine (an anyio task), and its
condition may itself be a coroutine (a tool call). ``what`` may be a function, for a
message that shows the last value seen.
"""

from __future__ import annotations

import inspect
import queue
import time
from collections.abc import Awaitable, Callable

import anyio

DEADLINE_S = 30.0

Said = str | Callable[[], str]


def _failure(what: Said, timeout: float) -> str:
    return f"within {timeout:g} s: {what() if callable(what) else what}"


def eventually(
    condition: Callable[[], bool],
    what: Said = "the condition",
    timeout: float = DEADLINE_S,
    interval: float = 0.01,
) -> None:
    """Poll ``condition`` until it holds; fail, naming ``what``, after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, _failure(what, timeout)
        time.sleep(interval)


def lines_until(
    lines: queue.Queue[str],
    wanted: Callable[[str], bool],
    what: str,
    timeout: float = DEADLINE_S,
    alive: Callable[[], bool] = lambda: True,
) -> list[str]:
    """Take lines from ``lines`` (filled by a thread reading a process's output) until one
    is ``wanted``; every line taken. ``alive`` says whether more lines can still come."""
    seen: list[str] = []

    def took_wanted() -> bool:
        try:
            seen.append(lines.get(timeout=0.1))
        except queue.Empty:
            assert alive(), f"the process ended before {what}: {seen}"
            return False
        return wanted(seen[-1])

    eventually(took_wanted, lambda: f"{what}: {seen}", timeout, interval=0)
    return seen


async def until(
    condition: Callable[[], bool | Awaitable[bool]],
    what: Said = "the condition",
    timeout: float = DEADLINE_S,
    interval: float = 0.02,
) -> None:
    """``eventually`` in a coroutine: the condition may be a coroutine function."""
    deadline = time.monotonic() + timeout
    while True:
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        assert time.monotonic() < deadline, _failure(what, timeout)
        await anyio.sleep(interval)
