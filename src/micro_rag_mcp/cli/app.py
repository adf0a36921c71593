"""``micro-rag``: the index and search of one folder, for a person at a terminal.

Four commands over the same index and core (``Engine``) as the MCP server: ``index``,
``search``, ``status`` and ``read``. This module parses the arguments and turns errors
into a line and an exit status; ``cli_commands`` runs the commands, ``cli_output`` draws
what they print.

Exit status: 0 done, 1 failed (no index yet, index busy or unwritable), 2 bad input,
130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from micro_rag_mcp import __version__
from micro_rag_mcp.core.arguments import (
    MAX_GLOB_CHARS,
    MAX_GLOBS,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
    too_long,
)
from micro_rag_mcp.core.errors import (
    ConfigError,
    InvalidArgument,
    MicroRagError,
    NotIndexed,
    PassageGone,
)
from micro_rag_mcp.core.logfmt import log_to_stderr
from micro_rag_mcp.core.settings import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_MAX_FILE_MB,
)
from micro_rag_mcp.options import OneLineParser, add_store_arguments
from micro_rag_mcp.search.reading import DEFAULT_MAX_CHARS, MAX_CHARS

logger = logging.getLogger("micro_rag_mcp")

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


def _between(low: float, high: float, kind: type[int] | type[float]) -> Callable[[str], float]:
    """An argparse type: a number of ``kind`` within ``[low, high]``."""
    name = "an integer" if kind is int else "a number"

    def check(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {name} (got {text!r})") from None
        if not low <= value <= high:
            if high == float("inf"):
                raise argparse.ArgumentTypeError(f"must be at least {low:g} (got {text})")
            raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g} (got {text})")
        return value

    return check


def _at_least(low: int) -> Callable[[str], float]:
    return _between(low, float("inf"), int)


def _at_most(chars: int) -> Callable[[str], str]:
    """An argparse type: a string of at most ``chars`` characters."""

    def check(text: str) -> str:
        if len(text) > chars:
            raise argparse.ArgumentTypeError(too_long("it", chars, len(text))[3:])
        return text

    return check


# The server's flags that choose how vectors are made: an index keeps what it was built with
_SERVER_ONLY = ("--model", "--model-precision")


class CommandParser(OneLineParser):
    """Also says how to pass a name that starts with ``-``, which argparse takes for a flag,
    and where the encoder's flags belong."""

    def error(self, message: str) -> NoReturn:
        unknown = message.partition("unrecognized arguments: ")[2].split()
        flag = unknown[0].partition("=")[0] if unknown else ""
        if flag in _SERVER_ONLY:
            message += (
                f"; {flag} is a flag of micro-rag-mcp, which builds the index with it; "
                "micro-rag uses what the index was built with"
            )
        elif "unrecognized arguments: -" in message or "are required: PATH" in message:
            message += (
                "; put -- before a name that starts with '-' (micro-rag read FOLDER -- -a.txt)"
            )
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog="micro-rag",
        description="Index and search one folder of documents from a terminal, with the "
        "same index the micro-rag-mcp server keeps in FOLDER/index.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = CommandParser(add_help=False)
    common.add_argument(
        "--index-folder", metavar="DIR", help="Where the index lives (default: FOLDER/index)."
    )
    common.add_argument(
        "-v", "--verbose", action="count", default=0, help="More detail in the log on stderr."
    )
    add_store_arguments(common)

    index = commands.add_parser(
        "index",
        parents=[common],
        help="Bring the index of FOLDER up to date.",
        description="Read new and changed files, drop deleted ones, embed what lacks a "
        "vector; show progress, then a summary. Waits while another process writes the index.",
    )
    _folder_argument(index)
    index.add_argument(
        "--force", action="store_true", help="Re-read every file (unchanged text keeps its vector)."
    )
    index.add_argument(
        "--glob",
        type=_at_most(MAX_GLOB_CHARS),
        metavar="G",
        help="Only paths matching this glob, relative to FOLDER.",
    )
    index.add_argument(
        "--no-wait",
        action="store_true",
        help="If another process is writing the index, say who and stop instead of waiting.",
    )
    index.add_argument(
        "--exts",
        metavar="LIST",
        help="Comma-separated extensions and groups to index, as the server's --exts "
        "(default: the index's, else docs).",
    )
    index.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="Leave out paths matching this .gitignore-style pattern (repeatable), as the "
        "server's --exclude (default: the index's, else none).",
    )
    index.add_argument(
        "--chunk-size",
        type=int,
        metavar="N",
        help=f"Chunk length in characters (default: the index's, else {DEFAULT_CHUNK_SIZE}).",
    )
    index.add_argument(
        "--chunk-overlap",
        type=int,
        metavar="N",
        help="Characters shared by consecutive chunks "
        f"(default: the index's, else {DEFAULT_CHUNK_OVERLAP}).",
    )
    index.add_argument(
        "--max-file-size",
        type=_between(0.001, float("inf"), float),
        metavar="MB",
        help="Skip files larger than this many MB "
        f"(default: the index's, else {DEFAULT_MAX_FILE_MB:g}).",
    )
    index.add_argument(
        "--shard",
        metavar="I/N",
        help="With --store: index only share I of N of the paths (a stable hash of each "
        "path), so N workers index one folder together.",
    )

    search = commands.add_parser(
        "search",
        parents=[common],
        help="Search the index of FOLDER.",
        description="Ranked passages for QUERY, each with its file, page or lines and the "
        "query's words highlighted.",
    )
    _folder_argument(search)
    search.add_argument(
        "query", type=_at_most(MAX_QUERY_CHARS), metavar="QUERY", help="What to look for."
    )
    search.add_argument(
        "-k", "--top-k", type=_between(1, 50, int), default=5, metavar="N",
        help="How many passages, 1-50 (default: 5).",
    )  # fmt: skip
    search.add_argument(
        "--threshold", type=_between(0, 1, float), default=0.2, metavar="X",
        help="Minimum cosine similarity, 0-1, for passages found by meaning only "
        "(default: 0.2).",
    )  # fmt: skip
    search.add_argument(
        "--path-glob", action="append", type=_at_most(MAX_GLOB_CHARS), metavar="GLOB",
        help="Only files matching GLOB, relative to FOLDER (reindex's syntax); repeat for any "
        f"of several (at most {MAX_GLOBS}).",
    )  # fmt: skip
    search.add_argument(
        "--modified-after", metavar="WHEN",
        help="Only files modified at or after WHEN: YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS], "
        "with Z or +HH:MM (UTC if none).",
    )  # fmt: skip
    search.add_argument(
        "--modified-before", metavar="WHEN", help="Only files modified before WHEN."
    )
    search.add_argument(
        "--file-types", metavar="LIST",
        help="Only these comma-separated suffixes or groups ('docs', 'code'), e.g. pdf,md.",
    )  # fmt: skip
    search.add_argument(
        "--json", action="store_true", help="Print the MCP search tool's result as JSON."
    )

    status = commands.add_parser(
        "status",
        parents=[common],
        help="Say what the index of FOLDER holds.",
        description="Files by state, failed files with their reasons, chunks, vectors, model, "
        "index size, last change, and whether a process is writing the index.",
    )
    _folder_argument(status)
    status.add_argument("--json", action="store_true", help="Print it as JSON.")

    read = commands.add_parser(
        "read",
        parents=[common],
        help="Print the indexed text of a file in FOLDER.",
        description="The text the index holds for PATH, as search's offsets count it: all "
        "of it, a range or a PDF page, at most --max-chars characters.",
    )
    _folder_argument(read)
    read.add_argument(
        "path", type=_at_most(MAX_PATH_CHARS), metavar="PATH", help="The file, relative to FOLDER."
    )
    read.add_argument("--start", type=_at_least(0), metavar="N", help="Offset to start at.")
    read.add_argument("--end", type=_at_least(1), metavar="N", help="Offset to stop before.")
    read.add_argument("--page", type=_at_least(1), metavar="N", help="A page of a PDF.")
    read.add_argument(
        "--anchor", metavar="ANCHOR", help="A search result's anchor: find its passage again."
    )
    read.add_argument(
        "--max-chars", type=_between(1, MAX_CHARS, int), default=DEFAULT_MAX_CHARS, metavar="N",
        help=f"At most this many characters, 1-{MAX_CHARS} (default: {DEFAULT_MAX_CHARS}).",
    )  # fmt: skip
    read.add_argument(
        "--json", action="store_true", help="Print the MCP read tool's result as JSON."
    )
    return p


def _folder_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", metavar="FOLDER", help="The folder of documents.")


def configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    log_to_stderr("micro-rag: %(levelname)s: %(message)s", level)


def _index_folder(args: argparse.Namespace) -> Path:
    return Path(args.index_folder) if args.index_folder else Path(args.folder) / "index"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.verbose)
    from micro_rag_mcp.cli.commands import COMMANDS
    from micro_rag_mcp.cli.output import Screens

    prog = f"micro-rag {args.command}"
    try:
        return COMMANDS[args.command](args, Screens())
    except (ConfigError, InvalidArgument, NotIndexed, PassageGone) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except MicroRagError as e:
        from micro_rag_mcp.core.diskspace import say_disk_full

        print(f"{prog}: {say_disk_full(e, _index_folder(args))}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
