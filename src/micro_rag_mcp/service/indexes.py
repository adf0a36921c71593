"""The indexes and models a service's sessions share.

Sessions on one index folder share one engine (its catalog and vectors in memory, its
watcher, its writer) and one queue of reindex jobs: a ``reindex`` from any of them joins
or queues as it would within one server. Engines of different folders share one loaded
model per encoder and precision. An engine outlives its last session by ``linger_s`` (a
client that restarts finds it warm), then stops; a model goes with the last engine that
took it.

A session whose settings would change how the shared index is built (its chunking,
encoder, precision, file types, exclusions or size limit) is refused with one sentence
while another session uses the index, never served a mix. An engine that only lingers
(no session left) steps aside for it instead: it stops, and the index is opened anew
with the new settings (left to linger, its watcher would build the index back to the old
ones at the folder's next change).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from micro_rag_mcp.core.errors import ConfigError
from micro_rag_mcp.core.settings import ModelName, Precision, Settings
from micro_rag_mcp.model.choice import AutoLoad, Loader
from micro_rag_mcp.model.embedder import Embedder
from micro_rag_mcp.serve.jobs import ReindexJobs
from micro_rag_mcp.serve.waiting import reindex_waiting
from micro_rag_mcp.service.handle import SessionStore
from micro_rag_mcp.store import Store

logger = logging.getLogger(__name__)

OpenStore = Callable[[Settings, Loader], Store]
LoadModel = Callable[[Settings, ModelName], Embedder]  # the encoder at the settings' precision
ModelKey = tuple[ModelName, Precision]

# What must agree between sessions on one index, with the flag that sets it.
_BUILT_BY = (
    ("data_folder", "--data-folder"),
    ("chunk_size", "--chunk-size"),
    ("chunk_overlap", "--chunk-overlap"),
    ("model", "--model"),
    ("model_precision", "--model-precision"),
    ("exts", "--exts"),
    ("exclude", "--exclude"),
    ("max_file_bytes", "--max-file-size"),
)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One attached session, as ``micro-rag status`` lists it."""

    title: str
    pid: int  # the launch's process
    since: float = field(default_factory=time.time)


class SharedModels:
    """One loaded model per encoder and precision, loaded at the first engine's first
    need and freed when the last engine that took it stops. An engine of ``--model
    auto`` takes the encoder its folder's language chose, shared with the engines that
    chose it or asked for it by name: one folder's English encoder is never served to
    another folder that asked for (or chose) the multilingual one."""

    def __init__(self, load: LoadModel) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._loaded: dict[ModelKey, Embedder] = {}
        self._users: dict[ModelKey, int] = {}

    def lease(self, settings: Settings) -> ModelLease:
        """One engine's use of the shared models, ended by ``ModelLease.end``."""
        return ModelLease(self, settings)

    def take(self, settings: Settings, encoder: ModelName) -> tuple[ModelKey, Embedder]:
        key = model_key(encoder, settings.model_precision)
        with self._lock:
            if key not in self._loaded:
                self._loaded[key] = self._load(settings, encoder)
            self._users[key] = self._users.get(key, 0) + 1
            return key, self._loaded[key]

    def leave(self, key: ModelKey) -> None:
        with self._lock:
            self._users[key] -= 1
            if not self._users[key]:
                del self._users[key]
                self._loaded.pop(key, None)  # freed once its last engine is gone

    @property
    def loaded(self) -> int:
        return len(self._loaded)

    @property
    def keys(self) -> list[ModelKey]:
        """The models loaded, as (encoder, precision)."""
        with self._lock:
            return sorted(self._loaded)


class ModelLease:
    """The model one engine took from the shared ones (none until its first need)."""

    def __init__(self, models: SharedModels, settings: Settings) -> None:
        self._models = models
        self._settings = settings
        self._lock = threading.Lock()
        self._key: ModelKey | None = None
        self._ended = False

    @property
    def loader(self) -> Loader:
        """What the engine loads its model by: the encoder named, or, for ``auto``, the
        one its folder's language chooses."""
        model = self._settings.model
        if model == "auto":
            return AutoLoad(self._take)
        return lambda: self._take(model)

    def _take(self, encoder: ModelName) -> Embedder:
        key, embedder = self._models.take(self._settings, encoder)
        with self._lock:
            if self._key is None and not self._ended:
                self._key = key
                return embedder
        self._models.leave(key)  # taken twice, or after the end: held by others only
        return embedder

    def end(self) -> None:
        with self._lock:
            key, self._key, self._ended = self._key, None, True
        if key is not None:
            self._models.leave(key)


def model_key(encoder: ModelName, precision: Precision) -> ModelKey:
    """What tells two loaded models apart: the encoder and its precision."""
    return encoder, precision


class Index:
    """One engine and its job queue, shared by the sessions attached to it."""

    def __init__(self, settings: Settings, store: Store, lease: ModelLease) -> None:
        self.settings = settings
        self.store = store
        self.lease = lease
        self.jobs = ReindexJobs(
            lambda force, glob, progress: reindex_waiting(self.open, force, glob, progress)
        )
        self.sessions: dict[int, SessionInfo] = {}
        self._lock = threading.Lock()
        self.started = False
        self.stopping = False  # no session attaches to it any more
        self._stop_lock = threading.Lock()
        self._stopped = False

    def open(self) -> Store:
        """The engine, started at the first session's first need."""
        with self._lock:
            if not self.started:
                self.store.start()
                self.started = True
        return self.store

    def stop(self) -> None:
        """Stop the engine once; a second caller waits for the first one's stop."""
        with self._stop_lock:
            if self._stopped:
                return
            self.jobs.close()
            self.store.stop()
            self.jobs.join(60.0)
            self._stopped = True


class Indexes:
    """The service's engines by index folder, with the sessions attached to each."""

    def __init__(self, open_store: OpenStore, models: SharedModels, linger_s: float) -> None:
        self._open_store = open_store
        self.models = models
        self.linger_s = linger_s
        self._lock = threading.Lock()
        self._by_folder: dict[Path, Index] = {}
        self._next = 0

    def attach(self, settings: Settings, info: SessionInfo) -> SessionStore:
        """A session's handle on the shared index of ``settings``; ConfigError if that
        index is served with settings that build it otherwise."""
        retired = None
        with self._lock:
            index = self._by_folder.get(settings.index_folder)
            if index is not None and not index.stopping and not index.sessions:
                differs = _differs(index.settings, settings)
                if differs:  # lingering: it steps aside
                    logger.info(
                        "%s is asked for with other settings (%s) and no session uses it: "
                        "stopping its engine to open it anew",
                        settings.index_folder,
                        differs,
                    )
                    index.stopping = True
                    retired = index
            if index is None or index.stopping:  # a stopping engine finishes alone
                lease = self.models.lease(settings)
                store = self._open_store(settings, lease.loader)
                index = Index(settings, store, lease)
                self._by_folder[settings.index_folder] = index
            else:
                _check_compatible(index.settings, settings)
            self._next += 1
            key = self._next
            index.sessions[key] = info
        if retired is not None:  # never in the caller's thread: a pass may be stopping
            threading.Thread(target=self._retire, args=(retired,), daemon=True).start()
        return SessionStore(index, lambda: self._detach(index, key))

    def sessions(self, index_folder: Path) -> list[SessionInfo]:
        with self._lock:
            index = self._by_folder.get(index_folder)
            return list(index.sessions.values()) if index is not None else []

    def running(self, index_folder: Path) -> Store | None:
        """The engine of ``index_folder`` if a session has started it, else None."""
        with self._lock:
            index = self._by_folder.get(index_folder)
        return index.store if index is not None and index.started else None

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._by_folder)

    def _detach(self, index: Index, key: int) -> None:
        with self._lock:
            index.sessions.pop(key, None)
            if index.sessions:
                return
        # Never in the caller's thread: a session's end must not wait for a pass to stop.
        timer = threading.Timer(self.linger_s, self._idle, (index,))
        timer.daemon = True
        timer.start()

    def _idle(self, index: Index) -> None:
        """Stop ``index`` if no session came back to it; it leaves the table once stopped
        (``stop_all`` finds it there meanwhile, and waits for it too)."""
        folder = index.settings.index_folder
        with self._lock:
            if index.sessions or index.stopping or self._by_folder.get(folder) is not index:
                return
            index.stopping = True
        logger.info("no session uses %s: stopping its engine", folder)
        self._retire(index)

    def _retire(self, index: Index) -> None:
        """Stop ``index`` (marked ``stopping``) and give its model back; it leaves the
        table unless another engine of its folder took its place there."""
        index.stop()
        with self._lock:
            if self._by_folder.get(index.settings.index_folder) is index:
                del self._by_folder[index.settings.index_folder]
        index.lease.end()

    def stop_all(self) -> None:
        with self._lock:
            indexes = list(self._by_folder.values())
            self._by_folder.clear()
        for index in indexes:
            index.stop()


def _differs(served: Settings, asked: Settings) -> str:
    """The first setting that builds the index otherwise, as ``--flag: theirs, not ours``
    ("" if none)."""
    for name, flag in _BUILT_BY:
        theirs, ours = getattr(served, name), getattr(asked, name)
        if theirs != ours:
            return f"{flag}: {_shown(theirs)}, not {_shown(ours)}"
    return ""


def _check_compatible(served: Settings, asked: Settings) -> None:
    differs = _differs(served, asked)
    if differs:
        raise ConfigError(
            f"the index {served.index_folder} is served to another session with other "
            f"settings ({differs}); start this one with the same flags, or give it its own "
            "--index-folder"
        )


def _shown(value: object) -> str:
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value) or "none"
    return str(value)
