"""Bounds every reader shares: file size, zip vetting, time budgets and text output.

A reader calls these before a library gets to see the bytes, so a hostile file is
refused with a reason instead of costing memory or time. The reader process has its
own memory ceiling and time limit (``isolation.py``); these guards make the common
cases a clear reason rather than a killed reader.
"""

from __future__ import annotations

import logging
import math
import stat
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from micro_rag_mcp.core.errors import ReadError

logger = logging.getLogger(__name__)

MIB = 1024 * 1024

# Zip-based formats (DOCX, XLSX, PPTX, EPUB).
ZIP_MAX_EXPANDED_BYTES = 200 * MIB
ZIP_MAX_RATIO = 100
ZIP_RATIO_MIN_BYTES = 10 * MIB
ZIP_MAX_ENTRIES = 10_000


def short(exc: BaseException | str, limit: int = 200) -> str:
    """A one-line, bounded description of an exception (or of a message)."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    return message if len(message) <= limit else message[: limit - 1] + "…"


def format_size(n: int) -> str:
    """``n`` bytes as a short human string (MB means MiB here)."""
    if n >= MIB:
        return f"{n / MIB:.3g} MB"
    return f"{n} bytes"


def os_reason(e: OSError) -> str:
    return f"cannot read file: {e.strerror or short(e)}"


def check_file(path: Path, max_bytes: int) -> int:
    """Refuse missing, non-regular and oversized files before any parsing; the size."""
    try:
        st = path.stat()
    except OSError as e:
        raise ReadError(os_reason(e), transient=True) from e
    if not stat.S_ISREG(st.st_mode):
        raise ReadError("not a regular file")
    if st.st_size > max_bytes:
        raise ReadError(
            f"file is {format_size(st.st_size)}, larger than the {format_size(max_bytes)} limit"
        )
    return st.st_size


@dataclass(frozen=True, slots=True)
class ZipLimits:
    """How much a zip-based document may expand to before it is refused as a bomb."""

    max_expanded_bytes: int = ZIP_MAX_EXPANDED_BYTES
    max_ratio: int = ZIP_MAX_RATIO
    ratio_min_bytes: int = ZIP_RATIO_MIN_BYTES
    max_entries: int = ZIP_MAX_ENTRIES


DEFAULT_ZIP_LIMITS = ZipLimits()


def vet_zip(path: Path, kind: str, required: str, limits: ZipLimits = DEFAULT_ZIP_LIMITS) -> None:
    """Refuse non-zips, zip bombs and archives without the ``required`` member.

    ``kind`` names the format in the reasons ("DOCX"). Only the central directory is
    read. The declared sizes can be trusted as upper bounds: Python's zipfile never
    yields more than ``ZipInfo.file_size`` bytes, and the libraries that open these
    formats read through it.
    """
    if not zipfile.is_zipfile(path):
        if _is_compound_file(path):
            raise ReadError(
                f"encrypted {kind} (needs a password), or an old binary Office file renamed"
            )
        raise ReadError(f"not a valid {kind} (not a zip archive)")
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as e:
        raise ReadError(f"not a valid {kind} (damaged zip archive: {short(e)})") from e
    if len(infos) > limits.max_entries:
        raise ReadError(f"refused: archive has {len(infos)} entries (zip bomb?)")
    total = sum(info.file_size for info in infos)
    if total > limits.max_expanded_bytes:
        raise ReadError(
            f"refused: archive expands to {format_size(total)}, over the "
            f"{format_size(limits.max_expanded_bytes)} limit (zip bomb?)"
        )
    for info in infos:
        if info.file_size > limits.ratio_min_bytes and info.file_size > limits.max_ratio * max(
            1, info.compress_size
        ):
            raise ReadError(
                f"refused: archive expands to {format_size(info.file_size)} from "
                f"{format_size(info.compress_size)} in {info.filename} (zip bomb?)"
            )
    if required not in {info.filename for info in infos}:
        raise ReadError(f"not a valid {kind} (no {required})")


_COMPOUND_FILE_MAGIC = bytes.fromhex("d0cf11e0a1b11ae1")


def _is_compound_file(path: Path) -> bool:
    """An OLE compound file: what Office writes for a password-protected document."""
    with open(path, "rb") as stream:
        return stream.read(8) == _COMPOUND_FILE_MAGIC


class Budget:
    """A time budget for work done in steps (pages, rows, slides), checked between steps.

    ``spent()`` says whether it is used up; the reader then stops and logs what it left
    out. A single step can still take long: the reader process's time limit covers that.
    A budget made ``within`` another ends by the other's end too (an e-mail's attachment
    is read in what is left of the message's time).
    """

    __slots__ = ("_deadline", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._deadline = min(time.monotonic() + seconds, _OUTER.get())

    @property
    def deadline(self) -> float:
        """When it is used up, on ``time.monotonic``'s clock."""
        return self._deadline

    def spent(self) -> bool:
        return time.monotonic() > self._deadline


_OUTER: ContextVar[float] = ContextVar("outer_deadline", default=math.inf)


@contextmanager
def within(budget: Budget) -> Iterator[None]:
    """Within this block, every ``Budget`` made ends by ``budget``'s end at the latest."""
    token = _OUTER.set(min(_OUTER.get(), budget.deadline))
    try:
        yield
    finally:
        _OUTER.reset(token)


# Characters of text a file may yield per byte of its own size. Compressed formats
# (zip packages, PDF content streams) hold more text than bytes, and a table repeats
# its header row in every row's text; text and markup hold about one character a byte
# (two for a form feed). A tiny file that reuses one part (an EPUB spine naming one
# chapter 5,000 times, one shared string in 300k cells, 2,000 pages drawing one content
# stream) would otherwise yield hundreds of millions of characters.
TEXT_RATIOS = {
    **dict.fromkeys((".pdf", ".docx", ".pptx", ".epub"), 20),
    **dict.fromkeys((".xlsx", ".csv", ".tsv"), 50),
}
DEFAULT_TEXT_RATIO = 2
TEXT_FLOOR_CHARS = 1_000_000  # any file may yield this much, whatever its size
MAX_TEXT_CHARS = 50_000_000  # no file yields more (about 60,000 passages)


@dataclass(frozen=True, slots=True)
class TextBound:
    """The most text one file may yield, and the reason given when it would yield more."""

    limit: int
    reason: str

    def check(self, length: int) -> None:
        if length > self.limit:
            raise ReadError(self.reason)


def text_bound(size: int, suffix: str) -> TextBound:
    """The bound for a file of ``size`` bytes in the format of ``suffix``."""
    ratio = TEXT_RATIOS.get(suffix.lower(), DEFAULT_TEXT_RATIO)
    proportional = max(TEXT_FLOOR_CHARS, ratio * size)
    if proportional >= MAX_TEXT_CHARS:
        return TextBound(
            MAX_TEXT_CHARS,
            f"refused: extracted text exceeds the limit of {MAX_TEXT_CHARS:,} characters",
        )
    return TextBound(
        proportional,
        f"refused: extracted text exceeds {proportional:,} characters, "
        f"over {ratio}× the file's size",
    )


_BOUND: ContextVar[TextBound | None] = ContextVar("text_bound", default=None)


@contextmanager
def bounded_text(bound: TextBound) -> Iterator[None]:
    """Within this block, ``check_text_length`` holds the text being built to ``bound``.

    Readers keep the signature ``path -> Document``; the bound travels beside them, so
    a reader that builds its text step by step stops at the first step past it instead
    of building the whole text first.
    """
    token = _BOUND.set(bound)
    try:
        yield
    finally:
        _BOUND.reset(token)


def check_text_length(length: int) -> None:
    """Refuse the file if ``length`` characters of text pass the current bound (if any)."""
    bound = _BOUND.get()
    if bound is not None:
        bound.check(length)
