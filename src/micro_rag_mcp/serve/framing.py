"""JSON-RPC lines on the stdio wire: which the server's relay passes on, which it answers.

The MCP SDK's stdio transport (mcp 2.3) turns a line that does not parse as a JSON-RPC
message into an exception item, which its dispatcher logs at debug level and drops: a
client that sent malformed JSON, ``[]``, a batch, or a message with an id and nothing
else gets no reply and waits on that id for ever. The id is gone by the time the SDK
sees the failure, so no hook of the SDK could answer it. The relay in ``stdio.py`` reads
every line first and answers these itself, as JSON-RPC 2.0 says: -32700 for a line that
is not JSON, -32600 for JSON that is not a message, with the message's id if it has a
usable one, else ``null``.

A request the SDK serves, sent before ``initialize``, gets the SDK's -32602 "Invalid
request parameters" with empty ``data``, which does not say what is wrong; the relay
answers those with the same code and a message that does (``needs_initialize``). A client
of the 2026 protocol has no handshake: its requests carry the protocol version in
``_meta`` (``ENVELOPE_KEY``), and the SDK serves them without ``initialize``.

A line too long to hold is kept only as its first and last few kilobytes; the id of the
request is found there (``oversized_id``), since every client we know writes the id
either before ``params`` (the Python SDK) or after it (the TypeScript SDK).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602  # the SDK's code for a request before initialize
SERVER_BUSY = -32000  # implementation-defined server error
NOT_INITIALIZED = (
    "send initialize first: no request but ping is answered before the initialize handshake"
)
# The requests of MCP's clients, by their method's prefix; any other method is the SDK's to
# answer (-32601, method not found, whether or not the handshake is done).
_CLIENT_REQUESTS = ("tools/", "resources/", "prompts/", "completion/", "logging/", "tasks/")
ENVELOPE_KEY = "io.modelcontextprotocol/protocolVersion"  # the SDK's PROTOCOL_VERSION_META_KEY

_NEXT_KEY = re.compile(r',\s*"')  # where a key may follow a comma

Kind = Literal["request", "cancel", "pass", "reply"]


@dataclass(frozen=True, slots=True)
class Incoming:
    """What one line from the client is.

    - ``request``: a request with ``id`` (key: ``key``); passed on, answered by the SDK.
    - ``cancel``: ``notifications/cancelled`` for the request ``key``; passed on.
    - ``pass``: any other message (a notification, a response); passed on.
    - ``reply``: not a message; ``reply`` is the error line to send back instead.
    """

    kind: Kind
    key: str = ""
    reply: bytes = b""
    method: str = ""  # a request's
    enveloped: bool = False  # a request of the 2026 protocol, which has no handshake


def id_key(value: Any) -> str:
    """A request id as a key that matches however the SDK writes it back (``1`` or ``"1"``
    are different ids; ``1`` and ``1.0`` are not sent by any client)."""
    return json.dumps(value)


def error_line(id_value: Any, code: int, message: str) -> bytes:
    """A JSON-RPC error response, as one line."""
    body = {"jsonrpc": "2.0", "id": id_value, "error": {"code": code, "message": message}}
    return json.dumps(body).encode() + b"\n"


def classify(line: bytes) -> Incoming:
    """Sort one line (without its newline) sent by the client."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return Incoming("reply", reply=error_line(None, PARSE_ERROR, "parse error: not JSON"))
    if isinstance(message, list):
        reason = "invalid request: batches are not supported" if message else "empty batch"
        return Incoming("reply", reply=error_line(None, INVALID_REQUEST, reason))
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        reason = "invalid request: not a JSON-RPC 2.0 message"
        return Incoming("reply", reply=error_line(_usable_id(message), INVALID_REQUEST, reason))
    method = message.get("method")
    has_id = "id" in message
    if isinstance(method, str):
        if has_id:
            if _usable_id(message) is None:
                reason = "invalid request: the id must be a string or an integer"
                return Incoming("reply", reply=error_line(None, INVALID_REQUEST, reason))
            key = id_key(message["id"])
            return Incoming("request", key=key, method=method, enveloped=_enveloped(message))
        if method == "notifications/cancelled":
            params = message.get("params")
            if isinstance(params, dict) and "requestId" in params:
                return Incoming("cancel", key=id_key(params["requestId"]))
        return Incoming("pass")
    if has_id and ("result" in message or "error" in message):
        return Incoming("pass")  # the client's answer to a request of the server's
    reason = "invalid request: no method, and not a response"
    return Incoming("reply", reply=error_line(_usable_id(message), INVALID_REQUEST, reason))


def oversized_id(head: bytes, tail: bytes) -> Any:
    """The id of a request whose line was too long to hold, from its first and last bytes;
    ``None`` if neither shows one.

    The head is read key by key from its ``{`` while the values are whole; the tail is
    tried from each ``, "`` on as the rest of the object (``{"jsonrpc": "2.0", "id": 1}``):
    only a suffix at the object's own level parses as one object.
    """
    found = _leading_id(head.decode("utf-8", "replace"))
    if found is None:
        found = _trailing_id(tail.decode("utf-8", "replace"))
    return found


def _leading_id(text: str) -> Any:
    decoder = json.JSONDecoder()
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return None
    at += 1
    while True:
        try:
            key, at = decoder.raw_decode(text, _skip(text, at))
            at = _skip(text, at)
            if not isinstance(key, str) or not text.startswith(":", at):
                return None
            value, at = decoder.raw_decode(text, _skip(text, at + 1))
        except ValueError:  # a value that goes on past the head (``params``), or not JSON
            return None
        if key == "id":
            return _usable_id({"id": value})
        at = _skip(text, at)
        if not text.startswith(",", at):
            return None
        at += 1


def _trailing_id(text: str) -> Any:
    end = text.rstrip()
    if not end.endswith("}"):
        return None
    for key in _NEXT_KEY.finditer(end):
        try:
            rest = json.loads("{" + end[key.end() - 1 :])
        except (ValueError, RecursionError):
            continue
        return _usable_id(rest) if isinstance(rest, dict) else None
    return None


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def needs_initialize(method: str) -> bool:
    """Whether a request for ``method`` is refused until the client has sent ``initialize``."""
    return method.startswith(_CLIENT_REQUESTS)


def answered(line: bytes) -> str | None:
    """The key of the request a line from the server answers, if it is a response."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if isinstance(message, dict) and "method" not in message and "id" in message:
        return id_key(message["id"])
    return None


def _enveloped(message: dict[str, Any]) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and ENVELOPE_KEY in meta


def _usable_id(message: object) -> Any:
    if isinstance(message, dict):
        value = message.get("id")
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return value
    return None
