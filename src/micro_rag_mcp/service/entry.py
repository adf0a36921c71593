"""``micro-rag-mcp``: each launch relays its session to the user's service, or serves alone.

The command line and the stdio protocol are those of ``serve.main``; its flags are
checked here first (a bad one exits 2 before anything starts). Then the launch serves
through the user's service (``client``), unless ``--standalone``, ``MICRO_RAG_STANDALONE``,
a Milvus ``--store``, or a service that cannot be used says to serve in this process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from micro_rag_mcp.core.errors import ConfigError
from micro_rag_mcp.serve import main as standalone
from micro_rag_mcp.service.client import ServiceOptions

DEFAULT_GRACE_S = 300.0  # the service exits this long after its last session ends


def service_options(environ: Mapping[str, str]) -> ServiceOptions | None:
    """Where the shared service lives, from the environment; None to serve standalone."""
    from micro_rag_mcp.service.runtime import private_root

    if environ.get("MICRO_RAG_STANDALONE", "") not in ("", "0"):
        return None
    if not sys.platform.startswith("linux"):  # the peer check and the socket path need Linux
        return None
    grace = environ.get("MICRO_RAG_SERVICE_GRACE", "")
    try:
        grace_s = float(grace) if grace else DEFAULT_GRACE_S
    except ValueError:
        raise ConfigError(
            f"MICRO_RAG_SERVICE_GRACE must be a number of seconds (got {grace!r})"
        ) from None
    if not grace_s >= 0:
        raise ConfigError(f"MICRO_RAG_SERVICE_GRACE must be 0 or more seconds (got {grace!r})")
    root = private_root(environ.get("MICRO_RAG_RUNTIME_DIR"), environ.get("XDG_RUNTIME_DIR"))
    return ServiceOptions(root, grace_s)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = standalone.build_parser().parse_args(argv)
    try:
        settings = standalone.settings_from_args(args)
        alone = args.standalone or args.store is not None or args.data_folder is None
        options = None if alone else service_options(os.environ)
    except ConfigError as e:
        print(f"micro-rag-mcp: error: {e}", file=sys.stderr)
        return 2
    if options is not None:
        standalone.configure_logging(args.verbose)
        standalone.greet_a_person(settings)
        from micro_rag_mcp.service.client import serve_via_service

        given = args.index_folder is not None
        status = serve_via_service(argv, settings, given, options)
        if status is not None:
            return status
    return standalone.main(argv)
