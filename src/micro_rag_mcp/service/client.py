"""A launch's part: reach the service (``launch``) and forward the session (``forward``).

``serve_via_service`` returns None when the service cannot be used (an unsafe runtime
directory, a service that does not start): the launch then serves in its own process,
as ``--standalone`` does, so a client is always served.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from micro_rag_mcp.core.settings import Settings
from micro_rag_mcp.service.launch import Hello, Refused, ServiceUnavailable, connect, hello
from micro_rag_mcp.service.runtime import LOG, ServiceDir, UnsafeDirectory, install_key

logger = logging.getLogger(__name__)

GREET_ATTEMPTS = 3  # a service exiting at the moment of a hello closes it: try again


@dataclass(frozen=True, slots=True)
class ServiceOptions:
    """Where the service lives and how long it outlives its last session."""

    root: Path
    grace_s: float


def open_service_dir(options: ServiceOptions) -> ServiceDir | None:
    try:
        return ServiceDir.open(options.root, install_key())
    except UnsafeDirectory as e:
        logger.warning("not using the shared service (%s): serving in this process", e)
        return None


def serve_via_service(
    argv: Sequence[str], settings: Settings, given: bool, options: ServiceOptions
) -> int | None:
    """Serve the client's stdio through the service; the exit status, or None if the
    service cannot be used."""
    where = open_service_dir(options)
    if where is None:
        return None
    service_args = ["--root", str(options.root), "--key", install_key()]
    service_args += ["--grace", f"{options.grace_s:g}"]
    folders = ["--data-folder", str(settings.data_folder)]
    folders += ["--index-folder", str(settings.index_folder)]
    greeting = Hello([*argv, *folders], given, os.getpid())

    def greeted() -> socket.socket:
        for _ in range(GREET_ATTEMPTS):
            sock = connect(where, service_args)
            try:
                pid = hello(sock, greeting)
            except ConnectionError:
                sock.close()
                continue
            except BaseException:
                sock.close()
                raise
            logger.info(
                "serving %s through the service (process %d; its log: %s)",
                settings.data_folder,
                pid,
                where.path / LOG,
            )
            return sock
        raise ServiceUnavailable("the service closed every connection at once")

    from micro_rag_mcp.serve.stdio import StopSignals, serve_stdio

    signals = StopSignals()
    try:
        first = greeted()
    except ServiceUnavailable as e:
        logger.warning("%s: serving in this process", e)
        return None
    except Refused as e:
        print(f"micro-rag-mcp: error: {e}", file=sys.stderr)
        return e.code
    from micro_rag_mcp.service.forward import Forwarder

    serve_stdio(Forwarder(first, greeted), signals)
    return 0
