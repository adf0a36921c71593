"""The one settings object, built once by the CLI and passed down."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from micro_rag_mcp.core.formats import group_suffixes

# Document formats, indexed by default (group "docs"), and source code (group "code"),
# indexed only when asked for: the formats of formats.FORMATS that can be read here.
DOC_EXTS: tuple[str, ...] = group_suffixes("docs")
CODE_EXTS: tuple[str, ...] = group_suffixes("code")
EXT_GROUPS: dict[str, tuple[str, ...]] = {"docs": DOC_EXTS, "code": CODE_EXTS}
DEFAULT_EXTS = DOC_EXTS
DEFAULT_CHUNK_SIZE = 1000
DEFAULT_CHUNK_OVERLAP = 200
DEFAULT_MAX_FILE_MB = 100.0
DEFAULT_POLL_S = 30.0

Precision = Literal["fp32", "int8"]
ModelName = Literal["minilm", "e5-small"]  # the encoders of model/files.py
ModelSetting = Literal["auto", "minilm", "e5-small"]  # auto: the folder's language chooses
WatchMode = Literal["auto", "poll", "off"]
TITLES_VERSION = 3  # how a file's title and headings join its chunks (bumped when that changes)


@dataclass(frozen=True, slots=True)
class Chunking:
    """How files become stored chunks: the chunking half of the run identity.

    It is recorded in an index as text (``recorded``: ``chars:1000/200;titles:2``), the
    form every index made so far holds, and read back from it (``from_record``).
    """

    size: int
    overlap: int
    titles: int = TITLES_VERSION

    @property
    def recorded(self) -> str:
        return f"chars:{self.size}/{self.overlap};titles:{self.titles}"

    @classmethod
    def from_record(cls, text: str) -> Chunking | None:
        """The chunking a recorded text names, or None if it names none."""
        size, sep, rest = text.removeprefix("chars:").partition("/")
        overlap, _, more = rest.partition(";")
        if not text.startswith("chars:") or not sep or not (size + overlap).isdigit():
            return None
        titles = more.removeprefix("titles:")
        return cls(int(size), int(overlap), int(titles) if titles.isdigit() else 0)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a server instance needs to know, resolved and validated."""

    data_folder: Path
    index_folder: Path
    title: str = "micro-rag-mcp"
    instructions: str = ""
    exts: tuple[str, ...] = DEFAULT_EXTS
    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP
    max_file_bytes: int = int(DEFAULT_MAX_FILE_MB * 1024 * 1024)
    model_wait_s: float = 5.0
    read_timeout_s: float = 120.0  # a file whose reading takes longer is skipped
    exclude: tuple[str, ...] = ()  # .gitignore-style patterns left out of the index
    skip_dirs: frozenset[str] = field(
        default_factory=lambda: frozenset({"node_modules", "__pycache__"})
    )
    # "auto": watch the folder, scanning it every poll_interval_s if it cannot be watched;
    # "poll": always scan; "off": index only at start-up and on a reindex.
    watch: WatchMode = "auto"
    # "int8": MiniLM on its int8 products, 1.9x less CPU to embed, -0.1 to -0.4 nDCG@10 hybrid
    model_precision: Precision = "fp32"
    # "minilm" reads English; "e5-small" (multilingual-e5-small) about 100 languages, at
    # 3.3x the CPU time; "auto": the folder's language chooses (model/choice.py)
    model: ModelSetting = "auto"
    poll_interval_s: float = DEFAULT_POLL_S
    # A module of readers added to the registry, in the reader process too (a seam for
    # tests; see ingest/extra_readers.py); "" for the installation's own readers only.
    readers: str = ""

    @property
    def scope_record(self) -> str:
        """Which files the index takes (types, exclusions, size limit), as recorded in it so
        that ``micro-rag index`` follows a server's flags unless told otherwise."""
        return json.dumps(
            {"exts": self.exts, "exclude": self.exclude, "max_file_bytes": self.max_file_bytes}
        )

    @property
    def chunking(self) -> Chunking:
        return Chunking(self.chunk_size, self.chunk_overlap)

    @property
    def chunking_id(self) -> str:
        """The chunking half of the run identity, as recorded (``Chunking.recorded``)."""
        return self.chunking.recorded


def recorded_chunking(chunking_id: str) -> tuple[int, int] | None:
    """The (size, overlap) a recorded ``Settings.chunking_id`` names, or None if none."""
    chunking = Chunking.from_record(chunking_id)
    return None if chunking is None else (chunking.size, chunking.overlap)
