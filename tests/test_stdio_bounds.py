"""The stdio wire: protocol errors answered, a client that stops reading bounded.

A real server process, raw lines on its pipes. Times are deadlines to poll against,
never measured speeds.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from micro_rag_mcp.serve.framing import oversized_id
from micro_rag_mcp.serve.relay import END_GRACE_S, MAX_IN_FLIGHT, MAX_MESSAGE_BYTES
from tests.stdiokit import RawServer, search_call

pytestmark = pytest.mark.slow

MIB = 1024 * 1024
TOOLS = ("search", "reindex", "read")
EXIT_DEADLINE_S = 60.0  # what docs/hostile.md promises after end-of-file or a signal


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Enough passages on one word that a search with top_k 50 returns 50 (~40 KB)."""
    data = tmp_path / "docs"
    data.mkdir()
    for i in range(60):
        paragraphs = [
            f"Heron survey {i}.{p}: the herons nested by the reeds again. " * 12 for p in range(3)
        ]
        (data / f"survey{i:02d}.txt").write_text("\n\n".join(paragraphs))
    return data


@pytest.fixture
def server(corpus: Path) -> Iterator[RawServer]:
    s = RawServer(corpus)
    yield s
    s.kill()


def test_lines_the_sdk_would_drop_get_json_rpc_errors(server: RawServer) -> None:
    server.start_reading()
    server.send(b"{not json", b"[]", b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]')
    server.send(b'{"jsonrpc": "2.0", "id": 7}', b"42")
    replies = [server.reply() for _ in range(5)]
    assert [(r["id"], r["error"]["code"]) for r in replies] == [
        (None, -32700),
        (None, -32600),
        (None, -32600),
        (7, -32600),
        (None, -32600),
    ]
    assert "batches are not supported" in replies[2]["error"]["message"]
    server.initialize()  # the connection still works
    assert server.reply()["id"] == "init"


def test_a_message_over_the_size_limit_is_refused_and_the_next_one_answered(
    server: RawServer,
) -> None:
    server.start_reading()
    huge = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "'
    server.send(huge + b"a" * (MAX_MESSAGE_BYTES + MIB) + b'"}}')
    server.initialize()
    refused, answered = server.reply(), server.reply()
    assert refused["id"] == 1 and refused["error"]["code"] == -32600
    assert f"longer than {MAX_MESSAGE_BYTES:,} bytes" in refused["error"]["message"]
    assert answered["id"] == "init" and "result" in answered


def huge_call(request_id: int | str | None, tool: str, *, id_last: bool) -> bytes:
    """A tools/call whose one argument is 10 MB, its id where the Python SDK writes it
    (before ``params``) or where the TypeScript SDK does (after), or no id at all."""
    key = {"search": "query", "reindex": "path_glob", "read": "path"}[tool]
    params = json.dumps({"name": tool, "arguments": {key: "x" * (10 * MIB)}})
    if request_id is None:
        return b'{"jsonrpc": "2.0", "method": "tools/call", "params": ' + params.encode() + b"}"
    rid = json.dumps(request_id)
    call = f'"method": "tools/call", "params": {params}'
    if id_last:
        return f'{{{call}, "jsonrpc": "2.0", "id": {rid}}}'.encode()
    return f'{{"jsonrpc": "2.0", "id": {rid}, {call}}}'.encode()


def test_an_oversized_call_is_refused_to_its_own_id_with_memory_unchanged(
    server: RawServer,
) -> None:
    server.wait_searchable("herons", idle=True)  # the model's memory is in "before"
    server.start_reading()
    before = server.peak_rss_bytes()
    calls: list[tuple[int | str, str, bool]] = [
        (n * 2 + last, tool, bool(last)) for n, tool in enumerate(TOOLS) for last in (0, 1)
    ]
    calls.append(("last", "search", True))
    for request_id, tool, id_last in calls:
        server.send(huge_call(request_id, tool, id_last=id_last))
    server.send(
        huge_call(None, "read", id_last=False), {"jsonrpc": "2.0", "id": 99, "method": "ping"}
    )
    replies = [server.reply() for _ in range(len(calls) + 2)]
    assert [r["id"] for r in replies] == [c[0] for c in calls] + [None, 99]
    for refused in replies[:-1]:
        assert refused["error"]["code"] == -32600
        assert f"longer than {MAX_MESSAGE_BYTES:,} bytes" in refused["error"]["message"]
    # A line held whole would be 10 MB, and parsed far more.
    assert server.peak_rss_bytes() - before < 8 * MIB


def flood(server: RawServer, requests: int, *, close: bool = True) -> threading.Thread:
    """Send ``requests`` searches from a thread (the pipe blocks once the server stops
    reading); then close stdin if ``close``."""

    def send() -> None:
        try:
            for i in range(requests):
                server.send(search_call(i, "herons nested reeds"))
            assert server.proc.stdin is not None
            if close:
                server.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass  # the server ended its input first

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_a_client_that_never_reads_cannot_hold_the_server_after_end_of_file(
    server: RawServer,
) -> None:
    server.wait_searchable("herons")
    flood(server, 200)  # ~8 MB of answers (twice the bound), never read
    code = server.exited_within(EXIT_DEADLINE_S)
    assert code == 0, "".join(server.log[-20:])


def test_sigterm_ends_a_server_whose_client_stopped_reading(server: RawServer) -> None:
    server.wait_searchable("herons")  # serving: signals now stop it cleanly
    for i in range(200):  # ~8 MB of answers, twice the bound
        server.send(search_call(i, "herons nested reeds"))
    server.proc.send_signal(signal.SIGTERM)
    code = server.exited_within(EXIT_DEADLINE_S + END_GRACE_S)
    assert code == 0, "".join(server.log[-20:])


def test_a_flood_is_answered_busy_past_the_limit_and_memory_stays_flat(
    server: RawServer,
) -> None:
    server.wait_searchable("herons", idle=True)  # the model's memory is in "before"
    server.start_reading()
    server.send(search_call(-1, "herons"))
    assert len(str(server.reply())) > 20_000  # a big answer: 50 passages
    before = server.peak_rss_bytes()
    requests = 1_000
    thread = flood(server, requests, close=False)
    replies = [server.reply(timeout=120) for _ in range(requests)]
    thread.join(60)
    busy = [r for r in replies if r.get("error", {}).get("code") == -32000]
    answered = [r for r in replies if "result" in r]
    assert sorted(r["id"] for r in replies) == list(range(requests))  # each id once
    assert busy and answered
    assert f"{MAX_IN_FLIGHT} requests are being answered" in busy[0]["error"]["message"]
    # 1,000 answers of ~40 KB held at once would be 40 MB and more.
    assert server.peak_rss_bytes() - before < 30 * MIB


def test_a_request_before_initialize_is_told_to_send_initialize_first(server: RawServer) -> None:
    server.start_reading()
    server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    server.send({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"})
    server.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    replies = {r["id"]: r for r in (server.reply() for _ in range(3))}
    assert replies[1]["error"]["code"] == -32602
    assert replies[1]["error"]["message"].startswith("send initialize first")
    assert replies[2]["error"]["code"] == -32601  # the SDK's: not a method of this server
    assert replies[3]["result"] == {}
    server.initialize()
    assert server.reply()["id"] == "init"
    server.send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
    assert [t["name"] for t in server.reply()["result"]["tools"]]


def test_a_request_of_the_protocol_without_handshake_needs_no_initialize(
    server: RawServer,
) -> None:
    server.start_reading()
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
    assert [t["name"] for t in server.reply()["result"]["tools"]]


@pytest.mark.parametrize(
    ("head", "tail", "found"),
    [
        (b'{"jsonrpc": "2.0", "id": "a\\"b", "method": "x", "params": {"q": "xx', b'x"}}', 'a"b'),
        (b'{"method": "x", "params": {"id": 5, "q": "xx', b'xx"}, "jsonrpc":"2.0","id":9}', 9),
        (b'{"method": "x", "params": {"q": "xx', b'xx", "id": 5}}', None),  # an argument's id
        (b'{"method": "x", "params": {"q": "xx', b'xx", "id": 5}, "id": true}', None),
        (b'{"jsonrpc": "2.0", "method": "x", "params": {"q": "xx', b'xx"}}', None),
        (b"not json at all", b"and no end either", None),
    ],
)
def test_the_id_of_an_oversized_line_is_read_only_at_the_objects_own_level(
    head: bytes, tail: bytes, found: object
) -> None:
    assert oversized_id(head, tail) == found
