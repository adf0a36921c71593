"""How a value or a list is shown inside a one-line message: quoted and cut short, or
its first few items and how many more."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

SHOWN_CHARS = 80  # of a value quoted back
FEW = 5  # items of a list named before "and N more"


def shown(value: Any) -> str:
    """A value as JSON, cut short: what the caller sent, as the caller wrote it."""
    if isinstance(value, str):
        value = value[:SHOWN_CHARS]  # not a copy of a 50 MB string to quote 80 of it
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[: SHOWN_CHARS - 1]}…"


def first_few(items: Sequence[object], few: int = FEW) -> str:
    """The first ``few`` items, then how many more: ``a, b, c, d, e and 7 more``."""
    words = ", ".join(str(x) for x in items[:few])
    return words + (f" and {len(items) - few} more" if len(items) > few else "")
