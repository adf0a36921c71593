"""The URI of an indexed file as an MCP resource: ``micro-rag:///`` and the path.

The path is relative to the data folder, percent-encoded but for its ``/`` (so a ``?``,
``#`` or ``%`` in a name survives the round trip). ``page``, ``char_start``,
``char_end`` and ``anchor`` may follow as query parameters, as ``read`` takes them.
"""

from __future__ import annotations

from urllib.parse import quote

SCHEME = "micro-rag"
PREFIX = f"{SCHEME}:///"
TEMPLATE = PREFIX + "{+path}{?page,char_start,char_end,anchor}"


def resource_uri(path: str) -> str:
    """The resource URI of an indexed file (``path`` relative, ``/`` separators)."""
    return PREFIX + quote(path, safe="/")
