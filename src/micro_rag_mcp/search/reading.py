"""An indexed file's text, read back from its stored chunks.

The catalog keeps each file's extracted text as overlapping chunks with their offsets, so
the text of a range is those chunks stitched by offset, and its offsets are the ones
``search`` cites. The chunker puts every non-whitespace character of the text in some
chunk; what no chunk holds is whitespace. Most of it is known exactly: the blank lines
that join a PDF's pages, and, in a file with line numbers, a run that is nothing but line
breaks (their count is the difference of the chunks' line numbers). Any other run keeps
its length and its line breaks, is shown as spaces, and the passage says where it is.
"""

from __future__ import annotations

import difflib
import os
import posixpath
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from micro_rag_mcp.core.errors import InvalidArgument, NotIndexed, PassageGone
from micro_rag_mcp.core.records import FileRecord, StoredChunk
from micro_rag_mcp.core.results import Hit, TextPassage
from micro_rag_mcp.core.settings import EXT_GROUPS
from micro_rag_mcp.core.shown import shown
from micro_rag_mcp.text.anchors import SIMILAR, Anchor, Found, locate, parse_anchor

DEFAULT_MAX_CHARS = 8000
MAX_CHARS = 50_000
_RUNS_NAMED = 5  # runs of unknown whitespace named in a notice
CONTEXT_CHARS = 160  # text kept on either side of a hit, for its anchor's neighbours


class IndexedText(Protocol):
    """What ``read_indexed`` needs of a store: the catalog, or another store's reader."""

    def snapshot(self) -> AbstractContextManager[Any]: ...
    def file_record(self, path: str) -> FileRecord | None: ...
    def file_extent(self, path: str) -> tuple[int, dict[int, tuple[int, int]]]: ...
    def file_chunks(self, path: str, start: int, end: int) -> list[StoredChunk]: ...
    def files(self) -> dict[str, FileRecord]: ...


def read_indexed(
    catalog: IndexedText,
    data_folder: Path | None,
    path: str,
    *,
    char_start: int | None = None,
    char_end: int | None = None,
    page: int | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    indexing: bool = False,
    anchor: str | None = None,
    exts: Collection[str] | None = None,
) -> TextPassage:
    """The indexed text of ``path`` from ``char_start`` (or the start of ``page``), at most
    ``max_chars`` characters of it, up to ``char_end`` (or the end of the page or file);
    or the passage of ``anchor``, wherever it is now (see ``anchors``).

    Raises ``NotIndexed`` for a path outside the folder, unknown or failed (saying so when
    its suffix is not among the indexed ``exts``, if given), ``InvalidArgument`` for a
    range the file does not have, and ``PassageGone`` for an anchor whose passage is no
    longer in the file.
    """
    if not 1 <= max_chars <= MAX_CHARS:
        raise InvalidArgument(f"max_chars must be between 1 and {MAX_CHARS} (got {max_chars})")
    wanted = parse_anchor(anchor) if anchor is not None else None
    if wanted is not None and (char_start, char_end, page) != (None, None, None):
        raise InvalidArgument(
            "anchor replaces char_start, char_end and page; give one or the other"
        )
    rel = catalog_path(path, data_folder)
    found: Found | None = None
    with catalog.snapshot():
        record = catalog.file_record(rel)
        if record is None or record.status != "ok":
            raise NotIndexed(_not_indexed(catalog, rel, record, indexing, exts))
        total, pages = catalog.file_extent(rel)
        if wanted is not None:
            found = _find(catalog, rel, total, wanted)
            char_start, char_end = found.char_start, found.char_end
        start, stop, end = window(rel, total, pages, char_start, char_end, page, max_chars)
        chunks = catalog.file_chunks(rel, start, stop)
    text, unknown, lines = stitch(chunks, start, stop)
    notices = _unknown_notice(unknown)
    if data_folder is not None:  # a store read without the folder cannot tell
        notices += _changed_notice(data_folder / rel, record)
    return TextPassage(
        path=rel,
        ext=record.ext,
        mtime_ns=record.mtime_ns,
        text=text,
        char_start=start,
        char_end=stop,
        next_char_start=stop if stop < end else None,
        total_chars=total,
        page=page_of(pages, start),
        line_start=lines[0] if lines else None,
        line_end=lines[1] if lines else None,
        notices=notices,
        changed=found.changed if found is not None else None,
        similarity=found.similarity if found is not None else None,
    )


def _find(catalog: IndexedText, rel: str, total: int, wanted: Anchor) -> Found:
    """Where the anchor's passage is in the file's text as indexed now."""
    text, _, _ = stitch(catalog.file_chunks(rel, 0, total), 0, total)
    found = locate(text, wanted)
    if found is None:
        raise PassageGone(
            f"the passage of this anchor is no longer in {rel}: less than "
            f"{SIMILAR:.0%} of it is left in place; search again for what it said"
        )
    return found


def with_context(catalog: IndexedText, hits: list[Hit], width: int = CONTEXT_CHARS) -> list[Hit]:
    """The hits with the text that stands just before and after each (for its anchor)."""
    out = []
    for hit in hits:
        c = hit.chunk
        low, high = max(0, c.char_start - width), c.char_end + width
        text, _, _ = stitch(catalog.file_chunks(c.path, low, high), low, high)
        context = (text[: c.char_start - low], text[c.char_end - low :])
        out.append(replace(hit, context=context))
    return out


def catalog_path(path: str, data_folder: Path | None) -> str:
    """The catalog's name for a path a caller gave: relative to the data folder, ``/``.

    An absolute path inside the data folder is taken too; anything leading out of it is
    refused.
    """
    norm = posixpath.normpath(path)
    if posixpath.isabs(norm):
        if data_folder is None:
            raise NotIndexed(_outside(path))
        root = data_folder.as_posix()
        if norm != root and not norm.startswith(root.rstrip("/") + "/"):
            raise NotIndexed(_outside(path))
        norm = posixpath.relpath(norm, root)
    if norm == ".." or norm.startswith("../"):
        raise NotIndexed(_outside(path))
    if norm == ".":
        raise NotIndexed(f"path {shown(path)} is the data folder itself, not a file in it")
    return norm


def _outside(path: str) -> str:
    return (
        f"path {shown(path)} is outside the data folder; give a path relative to it, "
        "as search returns it"
    )


def _not_indexed(
    catalog: IndexedText,
    rel: str,
    record: FileRecord | None,
    indexing: bool,
    exts: Collection[str] | None,
) -> str:
    if record is not None:
        return f"{shown(rel)} is in the folder but could not be indexed: {record.error}"
    ext = posixpath.splitext(rel)[1].lower()
    if exts is not None and ext not in exts:
        return _type_not_indexed(rel, ext)
    known = {p.casefold(): p for p, r in catalog.files().items() if r.status == "ok"}
    wanted = rel.casefold()
    same_name = [p for k, p in known.items() if posixpath.basename(k) == posixpath.basename(wanted)]
    close = [known[k] for k in difflib.get_close_matches(wanted, known, n=1, cutoff=0.75)]
    close = ([known[wanted]] if wanted in known else []) + same_name + close
    hint = (
        f"; did you mean {shown(close[0])}?"
        if close
        else "; paths are relative to the data folder, as search returns them"
    )
    if indexing:
        hint += " (indexing is running: it may not be read yet)"
    return f"no file {shown(rel)} in the index{hint}"


def _type_not_indexed(rel: str, ext: str) -> str:
    group = next((name for name, group in EXT_GROUPS.items() if ext in group), None)
    if group is None:
        kind = f"{ext} files" if ext else "files without a suffix"
        return f"no file {shown(rel)} in the index: {kind} are not a type the index reads"
    return (
        f"no file {shown(rel)} in the index: {ext} files are not indexed here; include "
        f"them with --exts (e.g. --exts {'docs,code' if group == 'code' else 'docs'}) and reindex"
    )


def window(
    rel: str,
    total: int,
    pages: dict[int, tuple[int, int]],
    char_start: int | None,
    char_end: int | None,
    page: int | None,
    max_chars: int,
) -> tuple[int, int, int]:
    """``(start, stop, end)``: the text returned is ``[start, stop)``, the range asked for
    ends at ``end`` (``stop`` when it all fits in ``max_chars``)."""
    low, high = 0, total
    if page is not None:
        low, high = _page_range(rel, pages, page)
    if char_start is not None and char_end is not None and char_end <= char_start:
        raise InvalidArgument(
            f"char_end must be greater than char_start (got {char_end} and {char_start})"
        )
    start = low if char_start is None else char_start
    if not low <= start < high:
        where = (
            f"within page {page} of {rel}, characters {low} to {high}"
            if page is not None
            else f"less than {total}, the length of the text of {rel}"
        )
        raise InvalidArgument(f"char_start must be {where} (got {start})")
    end = high if char_end is None else min(char_end, high)
    return start, min(end, start + max_chars), end


def _page_range(rel: str, pages: dict[int, tuple[int, int]], page: int) -> tuple[int, int]:
    if not pages:
        raise InvalidArgument(
            f"page applies to PDF files only; {rel} has no pages (use char_start and char_end)"
        )
    if page in pages:
        return pages[page]
    last = max(pages)
    if page > last:
        raise InvalidArgument(f"page must be at most {last}, the last page of {rel} with text")
    raise InvalidArgument(
        f"page {page} of {rel} has no text in the index (a blank page, or a scan without a "
        "text layer)"
    )


def page_of(pages: dict[int, tuple[int, int]], offset: int) -> int | None:
    """The page an offset falls on: the last page starting at or before it."""
    if not pages:
        return None
    before = [p for p, (s, _) in pages.items() if s <= offset]
    return max(before) if before else min(pages)


def stitch(
    chunks: Sequence[StoredChunk], start: int, stop: int
) -> tuple[str, list[tuple[int, int]], tuple[int, int] | None]:
    """The text of ``[start, stop)`` from ``chunks`` (in order; those overlapping the range
    and the nearest one on either side), the runs in it whose characters are not known,
    and its first and last line when the chunks carry line numbers.
    """
    if not chunks:
        return " " * (stop - start), [(start, stop)] if stop > start else [], None
    first = chunks[0]
    base = first.char_start if first.char_start <= start else 0
    pieces: list[str] = []
    unknown: list[tuple[int, int]] = []
    pos = base
    previous: StoredChunk | None = None
    for chunk in chunks:
        if pos >= stop:
            break
        if chunk.char_end <= pos:
            previous = chunk
            continue
        if chunk.char_start > pos:
            fill, exact = gap_fill(previous, chunk, chunk.char_start - pos)
            pieces.append(fill[: stop - pos])
            if not exact and min(chunk.char_start, stop) > start:
                unknown.append((max(pos, start), min(chunk.char_start, stop)))
            pos = chunk.char_start
            if pos >= stop:
                break
        upto = min(chunk.char_end, stop)
        pieces.append(chunk.text[pos - chunk.char_start : upto - chunk.char_start])
        pos, previous = upto, chunk
    if pos < stop:  # past the last chunk: nothing is known there
        pieces.append(" " * (stop - pos))
        unknown.append((max(pos, start), stop))
    text = "".join(pieces)
    lines = None
    if first.line_start is not None:
        anchor = first.line_start if base == first.char_start else 1
        last = max(start, stop - 1) - base
        lines = (anchor + text.count("\n", 0, start - base), anchor + text.count("\n", 0, last))
    return text[start - base :], unknown, lines


def gap_fill(before: StoredChunk | None, after: StoredChunk, length: int) -> tuple[str, bool]:
    """The whitespace between two chunks (``before`` None: the start of the text), and
    whether it is known exactly."""
    if after.line_start is not None:  # line breaks are counted by the line numbers
        breaks = after.line_start - (before.line_end or 1 if before is not None else 1)
        if 0 <= breaks <= length:
            return "\n" * breaks + " " * (length - breaks), breaks == length
    elif after.page is not None:  # pages are joined by a blank line; an empty page adds one
        pages_between = after.page - (before.page or 1 if before is not None else 1)
        if pages_between > 0 or before is None:
            return "\n" * length, length == 2 * pages_between
    return " " * length, False


def _unknown_notice(runs: list[tuple[int, int]]) -> list[str]:
    if not runs:
        return []
    named = ", ".join(f"{a}-{b}" for a, b in runs[:_RUNS_NAMED])
    more = f" and {len(runs) - _RUNS_NAMED} more" if len(runs) > _RUNS_NAMED else ""
    return [
        f"characters {named}{more} lie between two stored passages: they are whitespace "
        "(every other character is stored), shown as spaces and line breaks, but the index "
        "keeps no exact copy of them"
    ]


def _changed_notice(path: Path, record: FileRecord) -> list[str]:
    """Whether the file on disk is still the one indexed (one stat, no reading)."""
    try:
        st = os.stat(path)
    except OSError:
        return [f"{record.path} is no longer in the folder; this is its text as last indexed"]
    same_size = record.size < 0 or st.st_size == record.size
    if st.st_mtime_ns == record.mtime_ns and same_size:
        return []
    return [
        f"{record.path} has changed since it was indexed; this is its text as indexed "
        "(reindex to read the new one)"
    ]
