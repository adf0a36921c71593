"""One MCP session over one connection to the service: JSON-RPC lines both ways.

The SDK's stdio transport, over a socket: each line the relay sends becomes a message
for the server (or the parse error the SDK's own transport would give it), each message
the server sends becomes a line. The relay has bounded the lines already (``serve.relay``
in the launch), and a line past ``MAX_LINE_BYTES`` here ends the session.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ByteStream
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.server import MCPServer
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 8 * 1024 * 1024


async def read_line(reader: BufferedByteReceiveStream, limit: int = MAX_LINE_BYTES) -> bytes:
    """The next line without its newline; anyio.EndOfStream at the end."""
    try:
        return await reader.receive_until(b"\n", limit)
    except anyio.IncompleteRead as e:
        raise anyio.EndOfStream from e


async def run_session(
    server: MCPServer[Any], stream: ByteStream, reader: BufferedByteReceiveStream
) -> None:
    """Serve ``server`` (its lifespan entered for this session) until the relay ends its
    input; ``reader`` reads ``stream``, past the lines already taken from it."""
    low = server._lowlevel_server  # the SDK's loop serves the low-level server
    into_server, server_reads = create_context_streams[SessionMessage | Exception](0)
    server_writes, out_of_server = create_context_streams[SessionMessage](0)

    async def pump_in() -> None:
        async with into_server:
            while True:
                try:
                    line = await read_line(reader)
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.DelimiterNotFound):
                    return
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # the SDK's transport hands these on as they are
                    await into_server.send(exc)
                    continue
                await into_server.send(SessionMessage(message))

    async def pump_out() -> None:
        try:
            async for item in out_of_server:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await stream.send(text.encode() + b"\n")
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    logger.debug("a relay left before its answer was sent")
        finally:
            await out_of_server.aclose()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(pump_in)
        tasks.start_soon(pump_out)
        await low.run(server_reads, server_writes, low.create_initialization_options())
        tasks.cancel_scope.cancel()
