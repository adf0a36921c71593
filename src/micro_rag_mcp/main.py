"""The command line: parse and check the flags, configure logging, serve over stdio."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from micro_rag_mcp import __version__
from micro_rag_mcp.errors import ConfigError
from micro_rag_mcp.settings import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_EXTS,
    DEFAULT_MAX_FILE_MB,
    DEFAULT_POLL_S,
    Settings,
)

logger = logging.getLogger("micro_rag_mcp")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="micro-rag-mcp",
        description="Serve hybrid search over one folder of documents to an MCP client (stdio).",
    )
    p.add_argument("--data-folder", required=True, help="Folder of documents to index and search.")
    p.add_argument("--title", required=True, help="MCP server name shown to the client.")
    p.add_argument(
        "--inst", required=True, help="Server instructions for the client, passed verbatim."
    )
    p.add_argument("--index-folder", help="Where the index lives (default: <data-folder>/index).")
    p.add_argument(
        "--exts",
        default=",".join(DEFAULT_EXTS),
        help=f"Comma-separated extensions to index (default: {','.join(DEFAULT_EXTS)}).",
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
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="Debug detail in the stderr log (one line per file).",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return p


SUPPORTED_EXTS = frozenset(DEFAULT_EXTS)


def parse_exts(value: str) -> tuple[str, ...]:
    exts: list[str] = []
    for raw in value.split(","):
        ext = raw.strip().lower()
        if not ext:
            continue
        ext = ext if ext.startswith(".") else f".{ext}"
        if ext not in SUPPORTED_EXTS:
            supported = ", ".join(sorted(SUPPORTED_EXTS))
            raise ConfigError(
                f"--exts: unsupported extension {raw.strip()!r} (supported: {supported})"
            )
        if ext not in exts:
            exts.append(ext)
    if not exts:
        raise ConfigError("--exts: no extension given")
    return tuple(exts)


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Validate the flags into a Settings, or raise ConfigError with a one-line reason.

    Nothing is created or changed on disk: a start that is refused leaves no trace.
    """
    data = Path(args.data_folder).expanduser()
    if not data.is_dir():
        raise ConfigError(f"--data-folder {data}: not an existing folder")
    if not os.access(data, os.R_OK | os.X_OK):
        raise ConfigError(f"--data-folder {data}: not readable")
    data = data.resolve()
    index = Path(args.index_folder).expanduser().resolve() if args.index_folder else data / "index"
    if index.exists() and not index.is_dir():
        raise ConfigError(f"--index-folder {index}: not a folder")
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
        chunk_size=args.chunk_size,
        chunk_overlap=args.chunk_overlap,
        max_file_bytes=int(args.max_file_size * 1024 * 1024),
        watch="off" if args.no_watch else "auto",
        poll_interval_s=args.poll_interval,
    )


def create_index_folder(settings: Settings) -> None:
    """Make the index folder once every flag is accepted, or raise ConfigError."""
    index = settings.index_folder
    try:
        index.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--index-folder {index}: cannot be created ({e.strerror or e})") from e


def configure_logging(verbosity: int) -> None:
    level = logging.INFO if verbosity <= 0 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logger.setLevel(level)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = settings_from_args(args)
        create_index_folder(settings)
    except ConfigError as e:
        print(f"micro-rag-mcp: error: {e}", file=sys.stderr)
        return 2
    configure_logging(args.verbose)
    from micro_rag_mcp.embedder import load_embedder
    from micro_rag_mcp.server import build_server

    # onnxruntime's own guess undercounts the cores of some VMs; use every core we may run on.
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    logger.info("serving %s (index %s)", settings.data_folder, settings.index_folder)
    build_server(settings, lambda: load_embedder(threads=threads)).run("stdio")
    return 0
