"""The command line: parse and check the flags, configure logging, serve over stdio."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from micro_rag_mcp import __version__
from micro_rag_mcp.core.errors import ConfigError, StoreUnavailable
from micro_rag_mcp.core.logfmt import log_to_stderr
from micro_rag_mcp.core.settings import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_FILE_MB,
    DEFAULT_POLL_S,
    Settings,
)
from micro_rag_mcp.options import (
    OneLineParser,
    add_store_arguments,
    check_folders,
    parse_excludes,
    parse_exts,
    store_from_args,
)

logger = logging.getLogger("micro_rag_mcp")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="micro-rag-mcp",
        description="Serve hybrid search over one folder of documents to an MCP client (stdio).",
    )
    p.add_argument(
        "--data-folder",
        help="Folder of documents to index and search (required, except with --store).",
    )
    p.add_argument("--title", required=True, help="MCP server name shown to the client.")
    p.add_argument(
        "--inst", required=True, help="Server instructions for the client, passed verbatim."
    )
    p.add_argument("--index-folder", help="Where the index lives (default: <data-folder>/index).")
    p.add_argument(
        "--exts",
        default="docs",
        metavar="LIST",
        help="Comma-separated extensions and group names to index: 'docs' (every document "
        "format, the default), 'code' (source files), e.g. 'docs,code' or '.md,code'.",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="Leave out paths matching this .gitignore-style pattern (repeatable), "
        "e.g. 'drafts/' or '*.min.js'.",
    )
    p.add_argument(
        "--chunk-size",
        type=int,
        default=DEFAULT_CHUNK_SIZE,
        help=f"Chunk length in characters (default: {DEFAULT_CHUNK_SIZE}).",
    )
    p.add_argument(
        "--chunk-overlap",
        type=int,
        default=DEFAULT_CHUNK_OVERLAP,
        help=f"Characters shared by consecutive chunks (default: {DEFAULT_CHUNK_OVERLAP}).",
    )
    p.add_argument(
        "--max-file-size",
        type=float,
        default=DEFAULT_MAX_FILE_MB,
        metavar="MB",
        help=f"Skip files larger than this many MB (default: {DEFAULT_MAX_FILE_MB:g}).",
    )
    p.add_argument(
        "--model-precision",
        choices=("fp32", "int8"),
        default="fp32",
        help="Encoder precision: int8 embeds about 1.7-1.9x faster and ranks slightly "
        "worse (default: fp32). Changing it re-embeds the index.",
    )
    p.add_argument(
        "--model",
        choices=("auto", "minilm", "e5-small"),
        default="auto",
        help="Encoder: minilm reads English; e5-small (multilingual-e5-small) reads about "
        "100 languages and takes about 3x the CPU time to embed; auto lets the folder's "
        "language choose at its first index and keeps that choice (default: auto). "
        "Changing it by name re-embeds the index.",
    )
    p.add_argument(
        "--no-watch",
        action="store_true",
        help="Do not follow changes to the folder; index at start-up and on reindex only.",
    )
    p.add_argument(
        "--poll-interval",
        type=float,
        default=DEFAULT_POLL_S,
        metavar="SECONDS",
        help="Seconds between scans when the folder cannot be watched "
        f"(default: {DEFAULT_POLL_S:g}).",
    )
    add_store_arguments(p)
    p.add_argument(
        "--standalone",
        action="store_true",
        help="Serve in this process alone, not through the user's shared service "
        "(also: MICRO_RAG_STANDALONE=1).",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="Debug detail in the stderr log (one line per file).",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return p


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Validate the flags into a Settings, or raise ConfigError with a one-line reason.

    Nothing is created or changed on disk: a start that is refused leaves no trace.
    """
    if args.data_folder is None:
        if args.store is None:
            raise ConfigError("--data-folder is required (unless --store is given)")
        # A server of a shared store without a folder: it searches and reads only, and
        # nothing is ever written under these (placeholder) folders.
        data, index = Path.cwd(), Path.cwd() / "index"
    else:
        data, index = check_folders(args.data_folder, args.index_folder, "--data-folder")
    if args.chunk_size < 50:
        raise ConfigError("--chunk-size must be at least 50 characters")
    if not 0 <= args.chunk_overlap < args.chunk_size // 2 + 1:
        raise ConfigError("--chunk-overlap must be between 0 and half of --chunk-size")
    if not args.max_file_size > 0:
        raise ConfigError("--max-file-size must be a positive number of MB")
    if not args.title.strip():
        raise ConfigError("--title must not be empty")
    if not args.poll_interval >= 1:
        raise ConfigError("--poll-interval must be at least 1 second")
    return Settings(
        data_folder=data,
        index_folder=index,
        title=args.title,
        instructions=args.inst,
        exts=parse_exts(args.exts),
        exclude=parse_excludes(args.exclude),
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
        max_file_bytes=int(args.max_file_size * 1024 * 1024),
        watch="off" if args.no_watch else "auto",
        poll_interval_s=args.poll_interval,
        model_precision=args.model_precision,
        model=args.model,
    )


def configure_logging(verbosity: int) -> None:
    level = logging.INFO if verbosity <= 0 else logging.DEBUG
    log_to_stderr("%(asctime)s %(levelname)s %(name)s: %(message)s", level)


def greet_a_person(settings: Settings) -> None:
    """Started by hand in a terminal, say once what this is and what it waits for."""
    if sys.stdin is None or not sys.stdin.isatty():
        return
    logger.info(
        "this is an MCP server for %s: it talks to an MCP client over stdin and stdout, and "
        'waits for one now. Add it to a client (README, "MCP client configuration"), e.g. '
        "claude mcp add NAME -- %s --data-folder %s --title NAME --inst TEXT; "
        'to search from a terminal, use %s search %s "words"',
        settings.data_folder,
        installed_command("micro-rag-mcp"),
        settings.data_folder,
        installed_command("micro-rag"),
        settings.data_folder,
    )


def installed_command(name: str) -> str:
    """The full path of the command ``name`` as installed beside this interpreter (a client
    starts it with no virtual environment active), or found on PATH; else the bare name."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    found = shutil.which(name)
    return os.path.abspath(found) if found else name


def main(argv: Sequence[str] | None = None, *, readers: str = "") -> int:
    """Serve in this process alone (``service.entry`` decides whether a launch does);
    ``readers``: a module of readers to add (``Settings.readers``)."""
    from micro_rag_mcp.model.handle import model_loader
    from micro_rag_mcp.store import prepare

    args = build_parser().parse_args(argv)
    try:
        settings = dataclasses.replace(settings_from_args(args), readers=readers)
        store = store_from_args(args)
        prepare(settings, store, given=args.index_folder is not None)
    except ConfigError as e:
        print(f"micro-rag-mcp: error: {e}", file=sys.stderr)
        return 2
    except StoreUnavailable as e:  # a store that cannot be reached stops the start
        print(f"micro-rag-mcp: error: {e}", file=sys.stderr)
        return 1
    configure_logging(args.verbose)
    from micro_rag_mcp.serve.stdio import StopSignals, serve_stdio

    signals = StopSignals()  # from here on, SIGINT and SIGTERM stop the server cleanly

    load = model_loader(settings)
    # The model loads once the handshake is answered (server.StartAfterHandshake): begun
    # before it, its load competed with the SDK's import and made the handshake slower.
    from micro_rag_mcp.serve.server import build_server

    greet_a_person(settings)
    if store is None:
        logger.info("serving %s (index %s)", settings.data_folder, settings.index_folder)
    else:
        logger.info("serving the store %s", store.url)
    folder = settings.data_folder if args.data_folder is not None else None
    serve_stdio(build_server(settings, load, store, folder=folder), signals)
    return 0
