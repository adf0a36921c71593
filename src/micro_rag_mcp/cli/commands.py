"""The ``micro-rag`` commands: each checks its input, runs on the engine, prints.

``index`` takes the index's write lock like a second server would: it waits while
another process writes (with ``--no-wait`` it says who that is and stops), and Ctrl+C
stops it at its next step, keeping what is done. ``search``, ``status`` and ``read``
never write and never create an index folder.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from micro_rag_mcp.core.address import StoreConfig
from micro_rag_mcp.core.arguments import MAX_GLOBS
from micro_rag_mcp.core.errors import ConfigError, InvalidArgument, MicroRagError
from micro_rag_mcp.core.settings import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_EXTS,
    DEFAULT_MAX_FILE_MB,
    ModelSetting,
    Precision,
    Settings,
    recorded_chunking,
)
from micro_rag_mcp.ingest.scanner import PathGlob
from micro_rag_mcp.model.handle import model_loader, recorded_model, recorded_precision
from micro_rag_mcp.options import check_folders, parse_excludes, parse_exts, store_from_args
from micro_rag_mcp.store import Store, check_folder, holds_index, open_store, recorded_identity

if TYPE_CHECKING:
    from micro_rag_mcp.cli.output import IndexDisplay, Screens
    from micro_rag_mcp.core.results import ReindexReport
    from micro_rag_mcp.serve.tool_results import SearchResult

WAIT_POLL_S = 0.5
STOP_WAIT_S = 60.0  # the longest an ending command waits for the model's load to end
T = TypeVar("T")


class NoIndex(MicroRagError):
    """The folder has no index yet; only ``index`` makes one."""


# -- settings ---------------------------------------------------------------------------


def _folders(args: argparse.Namespace, *, local: bool = True) -> tuple[Path, Path]:
    """The data and index folders; ``local``: the index lives in the index folder, which
    must then be ours (``layout.check_index_folder``)."""
    data, index = check_folders(args.folder, args.index_folder, "FOLDER")
    if local:
        check_folder(index, None, given=args.index_folder is not None)
    return data, index


def _reader_settings(args: argparse.Namespace) -> Settings:
    """For the commands that only read: the index must exist already."""
    if args.store is not None:  # the store alone: the folder need not be here
        folder = Path(args.folder).expanduser().resolve()
        return Settings(
            data_folder=folder,
            index_folder=folder / "index",
            model_wait_s=0.0,
            model_precision=_index_precision(folder / "index", store_from_args(args)),
            model=_index_model(folder / "index", store_from_args(args)),
        )
    data, index = _folders(args)
    if not holds_index(index):
        raise NoIndex(f"no index in {index}; run micro-rag index {args.folder}")
    return Settings(
        data_folder=data,
        index_folder=index,
        exts=_index_scope(index).get("exts", DEFAULT_EXTS),
        model_wait_s=0.0,
        model_precision=_index_precision(index),
        model=_index_model(index),
    )


def _index_settings(args: argparse.Namespace, store: StoreConfig | None = None) -> Settings:
    data, index = _folders(args, local=store is None)
    size, overlap = _index_chunking(index, store)
    size = args.chunk_size if args.chunk_size is not None else size
    overlap = args.chunk_overlap if args.chunk_overlap is not None else min(overlap, size // 2)
    if size < 50:
        raise ConfigError("--chunk-size must be at least 50 characters")
    if not 0 <= overlap <= size // 2:
        raise ConfigError("--chunk-overlap must be between 0 and half of --chunk-size")
    scope = _index_scope(index) if store is None else {}
    return Settings(
        data_folder=data,
        index_folder=index,
        exts=parse_exts(args.exts) if args.exts is not None else scope.get("exts", DEFAULT_EXTS),
        exclude=parse_excludes(args.exclude)
        if args.exclude is not None
        else scope.get("exclude", ()),
        chunk_size=size,
        chunk_overlap=overlap,
        max_file_bytes=int(args.max_file_size * 1024 * 1024)
        if args.max_file_size is not None
        else scope.get("max_file_bytes", int(DEFAULT_MAX_FILE_MB * 1024 * 1024)),
        model_precision=_index_precision(index, store),
        model=_index_model(index, store),
    )


def _index_scope(index: Path) -> dict[str, Any]:
    """Which files an existing index takes (``Settings.scope_record``), so ``index`` does
    not drop or add files a server's flags chose; {} for a new index or a record it cannot
    use (each value is checked as its flag would be)."""
    try:
        record = json.loads(recorded_identity(index, None).get("scope", "{}"))
        return {
            "exts": parse_exts(",".join(record["exts"])),
            "exclude": parse_excludes(record["exclude"]),
            "max_file_bytes": max(1, int(record["max_file_bytes"])),
        }
    except (ValueError, TypeError, KeyError, ConfigError):
        return {}


def _index_precision(index: Path, store: StoreConfig | None = None) -> Precision:
    """The encoder precision an existing index's (or the store's) vectors were made
    with (fp32 for a new one), so a command never re-embeds a server's index by accident."""
    return recorded_precision(recorded_identity(index, store).get("vector_space", ""))


def _index_model(index: Path, store: StoreConfig | None = None) -> ModelSetting:
    """The encoder an existing index's (or the store's) vectors were made with (auto for
    a new one), so a command never re-embeds a server's index by accident."""
    space = recorded_identity(index, store).get("vector_space", "")
    return recorded_model(space) if space else "auto"


def _index_chunking(index: Path, store: StoreConfig | None = None) -> tuple[int, int]:
    """The chunking an existing index (or the store) was built with, so ``index`` does
    not re-chunk it by accident; the defaults for a new one."""
    recorded = recorded_chunking(recorded_identity(index, store).get("chunking", ""))
    return recorded or (DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP)


def _open(settings: Settings, store: StoreConfig | None, *, writing: bool) -> Store:
    """The store the flags name; a writer indexes the settings' data folder."""
    folder = settings.data_folder if writing or settings.data_folder.is_dir() else None
    loader = model_loader(settings)
    return open_store(settings, loader, store, folder=folder)


def _reader_engine(args: argparse.Namespace) -> Store:
    return _open(_reader_settings(args), store_from_args(args), writing=False)


# -- commands ---------------------------------------------------------------------------


def cmd_index(args: argparse.Namespace, screens: Screens) -> int:
    from micro_rag_mcp.serve.tool_results import reindex_result

    config = store_from_args(args, args.shard)
    if config is None and args.shard is not None:
        raise ConfigError("--shard applies only with --store")
    if args.glob is not None:
        PathGlob(args.glob, name="--glob")  # refused in the flag's name, before any work
    settings = _index_settings(args, config)
    display = screens.index_display()
    engine: Store | None = None
    try:
        opened = engine = _open(settings, config, writing=True)
        report = _interruptible(engine, lambda stop: _reindex_waiting(opened, args, display, stop))
    finally:
        display.close()
        if engine is not None:
            # However the pass ended, the model's load may still be under way in its
            # thread: a process that exits while it runs is aborted by onnxruntime
            # ("terminate called without an active exception", status 134).
            engine.stop(timeout=STOP_WAIT_S)
    result = reindex_result(report, args.glob, settings.exts, glob_name="--glob")
    assert engine is not None
    screens.report(result, engine.state().model_status)
    return 0


def _reindex_waiting(
    engine: Store, args: argparse.Namespace, display: IndexDisplay, stop: threading.Event
) -> ReindexReport:
    """Reindex; while another process writes, wait for it to be done, then go on."""
    from micro_rag_mcp.core.errors import IndexBusy, Stopped

    while True:
        try:
            return engine.reindex(force=args.force, path_glob=args.glob, progress=display)
        except IndexBusy as e:
            if args.no_wait:
                raise
            display.waiting(str(e))
            while not stop.wait(WAIT_POLL_S) and engine.written_elsewhere():
                pass
            if stop.is_set():
                raise Stopped("interrupted while waiting for the index lock") from e


def _interruptible(engine: Store, work: Callable[[threading.Event], T]) -> T:
    """Run ``work`` in a thread; Ctrl+C sets the event it is given and stops the engine at
    its next step, then waits for it, so what was done is kept.

    The wait is on an event the thread sets as it ends, never on ``Thread.join`` with a
    timeout: on Python 3.11 a Ctrl+C that lands inside such a join marks the running thread
    as ended. And the thread is started inside the ``try``: on a busy machine it can run
    (and ask for Ctrl+C) before ``start`` returns.
    """
    outcome: dict[str, object] = {}
    stop, ended = threading.Event(), threading.Event()

    def run() -> None:
        try:
            outcome["value"] = work(stop)
        except BaseException as e:
            outcome["error"] = e
        finally:
            ended.set()

    worker = threading.Thread(target=run, name="micro-rag-index")
    try:
        worker.start()
        while not ended.wait(0.2):
            pass
    except KeyboardInterrupt:
        print("micro-rag: stopping at the next step; what is done is kept", file=sys.stderr)
        stop.set()
        engine.stop(timeout=0.0)
        while True:
            try:
                if ended.wait(0.2):
                    break
            except KeyboardInterrupt:
                continue
        raise
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def cmd_search(args: argparse.Namespace, screens: Screens) -> int:
    from micro_rag_mcp.search.scope import ScopeNames, parse_scope
    from micro_rag_mcp.serve.tool_results import search_result, wire

    if not args.query.strip():
        raise InvalidArgument("QUERY must contain some text")
    if len(args.path_glob or ()) > MAX_GLOBS:
        raise InvalidArgument(
            f"--path-glob may be given at most {MAX_GLOBS} times (got {len(args.path_glob)})"
        )
    flags = ScopeNames("--path-glob", "--modified-after", "--modified-before", "--file-types")
    scope = parse_scope(
        args.path_glob, args.modified_after, args.modified_before, args.file_types, flags
    )
    result = _search_in_service(args)
    if result is None:
        engine = _reader_engine(args)
        engine.load_model(timeout=300.0)
        result = search_result(engine.search(args.query, args.top_k, args.threshold, scope))
    if args.json:
        screens.json(wire(result))
    else:
        screens.hits(result, args.query)
    return 0


def cmd_status(args: argparse.Namespace, screens: Screens) -> int:
    from micro_rag_mcp.core.errors import ModelUnavailable
    from micro_rag_mcp.model.files import ENCODERS, find_weights

    summary = _reader_engine(args).status()
    sessions = _sessions_in_service(args)
    try:
        find_weights(ENCODERS[recorded_model(summary.vector_model or "")])
        model = "installed"
    except ModelUnavailable as e:
        model = f"unavailable: {e}"
    if args.json:
        screens.json({**screens.status_json(summary, model), "sessions": sessions})
    else:
        screens.status(summary, model)
        titles = ", ".join(str(s["title"]) for s in sessions)
        screens.out.print(
            f"sessions  {len(sessions)} served by the service" + (f": {titles}" if titles else "")
        )
    return 0


def _sessions_in_service(args: argparse.Namespace) -> list[dict[str, Any]]:
    from micro_rag_mcp.cli.via_service import attached_sessions

    if args.store is not None:
        return []
    return attached_sessions(_folders(args)[1])


def _search_in_service(args: argparse.Namespace) -> SearchResult | None:
    """The search, answered by the service's engine if it serves this index."""
    from micro_rag_mcp.cli.via_service import search_in_service
    from micro_rag_mcp.serve.tool_results import SearchResult

    if args.store is not None:
        return None
    scope = [args.path_glob, args.modified_after, args.modified_before, args.file_types]
    index = _folders(args)[1]
    found = search_in_service(index, args.query, args.top_k, args.threshold, scope)
    return SearchResult.model_validate(found) if found is not None else None


def cmd_read(args: argparse.Namespace, screens: Screens) -> int:
    from micro_rag_mcp.search.reading import DEFAULT_MAX_CHARS
    from micro_rag_mcp.serve.read_result import read_result
    from micro_rag_mcp.serve.tool_results import wire

    engine = _reader_engine(args)
    try:
        passage = engine.read(
            args.path,
            char_start=args.start,
            char_end=args.end,
            page=args.page,
            max_chars=args.max_chars,
            anchor=args.anchor,
        )
    except InvalidArgument as e:  # said in the tool's names: said again in the flags'
        raise InvalidArgument(_as_flags(str(e))) from None
    if args.json:
        screens.json(wire(read_result(passage)))
    else:
        asked = args.max_chars if args.max_chars != DEFAULT_MAX_CHARS else None
        screens.passage(passage, args.folder, args.page, args.end, asked)
    return 0


_FLAGS = (
    (r"\bchar_start\b", "--start"),
    (r"\bchar_end\b", "--end"),
    (r"\bmax_chars\b", "--max-chars"),
    (r"\banchor replaces\b", "--anchor replaces"),
    (r"\band page\b", "and --page"),
    (r"^page applies\b", "--page applies"),
)


def _as_flags(message: str) -> str:
    """A message of ``read`` that names the tool's parameters, naming the flags instead."""
    for pattern, flag in _FLAGS:
        message = re.sub(pattern, flag, message)
    return message


COMMANDS: dict[str, Callable[[argparse.Namespace, Screens], int]] = {
    "index": cmd_index,
    "search": cmd_search,
    "status": cmd_status,
    "read": cmd_read,
}
