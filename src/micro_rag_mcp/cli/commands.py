"""The ``micro-rag`` commands: each checks its input, runs on the engine, prints.

``index`` takes the index's write lock like a second server would: it waits while
another process writes (with ``--no-wait`` it says who that is and stops), and Ctrl+C
stops it at its next step, keeping what is done. ``search``, ``status`` and ``read``
never write and never create an index folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from micro_rag_mcp.core.errors import ConfigError, InvalidArgument, MicroRagError
from micro_rag_mcp.core.settings import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_EXTS,
    DEFAULT_MAX_FILE_MB,
    Precision,
    Settings,
)
from micro_rag_mcp.ingest.scanner import PathGlob
from micro_rag_mcp.local.layout import IndexPaths, check_index_folder
from micro_rag_mcp.milvus.config import StoreConfig
from micro_rag_mcp.options import check_folders, parse_excludes, parse_exts, store_from_args
from micro_rag_mcp.store import Store

if TYPE_CHECKING:
    from micro_rag_mcp.cli.output import IndexDisplay, Screens
    from micro_rag_mcp.core.results import ReindexReport
    from micro_rag_mcp.local.engine import Engine
    from micro_rag_mcp.model.embedder import Embedder

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
        check_index_folder(index, given=args.index_folder is not None)
    return data, index


def _reader_settings(args: argparse.Namespace) -> Settings:
    """For the commands that only read: the index must exist already."""
    if args.store is not None:  # the store alone: the folder need not be here
        folder = Path(args.folder).expanduser().resolve()
        return Settings(
            data_folder=folder,
            index_folder=folder / "index",
            model_wait_s=0.0,
            model_precision=_store_precision(store_from_args(args)),
        )
    data, index = _folders(args)
    if not IndexPaths(index).catalog.exists():
        raise NoIndex(f"no index in {index}; run micro-rag index {args.folder}")
    return Settings(
        data_folder=data,
        index_folder=index,
        exts=_index_scope(IndexPaths(index)).get("exts", DEFAULT_EXTS),
        model_wait_s=0.0,
        model_precision=_index_precision(IndexPaths(index)),
    )


def _index_settings(args: argparse.Namespace, store: StoreConfig | None = None) -> Settings:
    data, index = _folders(args, local=store is None)
    recorded = _store_identity(store).get("chunking", "") if store else None
    size, overlap = _index_chunking(IndexPaths(index), recorded)
    size = args.chunk_size if args.chunk_size is not None else size
    overlap = args.chunk_overlap if args.chunk_overlap is not None else min(overlap, size // 2)
    if size < 50:
        raise ConfigError("--chunk-size must be at least 50 characters")
    if not 0 <= overlap <= size // 2:
        raise ConfigError("--chunk-overlap must be between 0 and half of --chunk-size")
    scope = _index_scope(IndexPaths(index)) if store is None else {}
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
        model_precision=_store_precision(store) if store else _index_precision(IndexPaths(index)),
    )


def _index_scope(paths: IndexPaths) -> dict[str, Any]:
    """Which files an existing index takes (``Settings.scope_record``), so ``index`` does
    not drop or add files a server's flags chose; {} for a new index or a record it cannot
    use (each value is checked as its flag would be)."""
    try:
        record = json.loads(_recorded(paths, "scope") or "{}")
        return {
            "exts": parse_exts(",".join(record["exts"])),
            "exclude": parse_excludes(record["exclude"]),
            "max_file_bytes": max(1, int(record["max_file_bytes"])),
        }
    except (ValueError, TypeError, KeyError, ConfigError):
        return {}


def _recorded(paths: IndexPaths, key: str) -> str:
    """A run-identity value an existing index recorded, or "" (no index, or not recorded)."""
    from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt

    try:
        catalog = Catalog.open_reader(paths.catalog)
    except (CatalogCorrupt, OSError):
        return ""
    try:
        return catalog.get_meta(key) or ""
    finally:
        catalog.close()


def _index_precision(paths: IndexPaths) -> Precision:
    """The encoder precision an existing index's vectors were made with (fp32 for a new
    one), so a command never re-embeds a server's index by accident."""
    return "int8" if "+int8;" in _recorded(paths, "vector_model") else "fp32"


def _index_chunking(paths: IndexPaths, recorded: str | None = None) -> tuple[int, int]:
    """The chunking an existing index (or the store's ``recorded`` one) was built with, so
    ``index`` does not re-chunk it by accident; the defaults for a new one."""
    recorded = _recorded(paths, "chunking") if recorded is None else recorded
    m = re.match(r"chars:(\d+)/(\d+)", recorded)
    return (int(m[1]), int(m[2])) if m else (DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP)


def _store_identity(store: StoreConfig | None) -> dict[str, str]:
    """The run identity a store recorded ({} for none yet)."""
    from micro_rag_mcp.milvus.index import MilvusIndex

    if store is None:
        return {}
    index = MilvusIndex(store)
    try:
        return index.identity() or {}
    finally:
        index.close()


def _store_precision(store: StoreConfig | None) -> Precision:
    """As ``_index_precision``, for a store."""
    return "int8" if "+int8;" in _store_identity(store).get("vector_space", "") else "fp32"


def _store_engine(settings: Settings, store: StoreConfig, writing: bool) -> Store:
    """The tools over a store; a writer indexes the settings' data folder."""
    from micro_rag_mcp.milvus.engine import MilvusEngine

    folder = settings.data_folder if writing or settings.data_folder.is_dir() else None
    return MilvusEngine(settings, _embedder_loader(settings, local=False), store, folder=folder)


def _reader_engine(args: argparse.Namespace) -> Store:
    settings = _reader_settings(args)
    config = store_from_args(args)
    # A reader loads the model without keeping its graph: it never writes the index folder.
    return (
        _engine(settings, local=False) if config is None else _store_engine(settings, config, False)
    )


def _embedder_loader(settings: Settings, *, local: bool = True) -> Callable[[], Embedder]:
    """The model's loader; only a ``local`` one (a writer of the index folder) keeps its
    built graph and scratch files there."""

    def load() -> Embedder:
        from micro_rag_mcp.model.embedder import load_embedder

        threads = (
            len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        )
        return load_embedder(
            threads=threads,
            quantize=settings.model_precision == "int8",
            work_dir=settings.index_folder if local else None,
            cache_dir=settings.index_folder if local else None,
        )

    return load


def _engine(settings: Settings, *, local: bool = True) -> Engine:
    """The embedded store's engine; ``local``: its model may keep files in the index folder."""
    from micro_rag_mcp.local.engine import Engine

    return Engine(settings, _embedder_loader(settings, local=local))


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
        if config is None:
            local = engine = _engine(settings)
            report = _interruptible(
                engine, lambda stop: _reindex_waiting(local, args, display, stop)
            )
        else:
            shared = engine = _store_engine(settings, config, True)
            report = _interruptible(
                engine,
                lambda _: shared.reindex(force=args.force, path_glob=args.glob, progress=display),
            )
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
    engine: Engine, args: argparse.Namespace, display: IndexDisplay, stop: threading.Event
) -> ReindexReport:
    """Reindex; while another process writes, wait for its lock to be free, then go on."""
    from micro_rag_mcp.core.errors import IndexBusy, Stopped
    from micro_rag_mcp.core.fsutil import lock_is_held

    while True:
        try:
            return engine.reindex(force=args.force, path_glob=args.glob, progress=display)
        except IndexBusy as e:
            if args.no_wait:
                raise
            display.waiting(str(e))
            while lock_is_held(engine.paths.lock) and not stop.wait(WAIT_POLL_S):
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
    from micro_rag_mcp.search.scope import parse_scope
    from micro_rag_mcp.serve.tool_results import search_result, wire

    if not args.query.strip():
        raise InvalidArgument("QUERY must contain some text")
    scope = parse_scope(args.path_glob, args.modified_after, args.modified_before, args.file_types)
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
    from micro_rag_mcp.model.embedder import find_model_dir

    summary = _reader_engine(args).status()
    try:
        find_model_dir()
        model = "installed"
    except ModelUnavailable as e:
        model = f"unavailable: {e}"
    if args.json:
        screens.json(screens.status_json(summary, model))
    else:
        screens.status(summary, model)
    return 0


def cmd_read(args: argparse.Namespace, screens: Screens) -> int:
    from micro_rag_mcp.serve.tool_results import read_result, wire

    engine = _reader_engine(args)
    passage = engine.read(
        args.path,
        char_start=args.start,
        char_end=args.end,
        page=args.page,
        max_chars=args.max_chars,
        anchor=args.anchor,
    )
    if args.json:
        screens.json(wire(read_result(passage)))
    else:
        screens.passage(passage, args.folder, args.page)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, Screens], int]] = {
    "index": cmd_index,
    "search": cmd_search,
    "status": cmd_status,
    "read": cmd_read,
}
