"""Plain text: ``.txt``, ``.md`` and the other formats read as lines.

The encoding is guessed (BOMs, UTF-8, BOM-less UTF-16, detection); binary content is
refused. Markdown headings give the sections; a ``.txt`` file's first line, standing
alone, its title.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers.document import (
    Document,
    HeadingPath,
    Marks,
    clean_title,
    normalize_text,
)
from micro_rag_mcp.text.code_text import reads_as_code

# Text sniffing.
_SNIFF_BYTES = 8192
_MAX_CONTROL_FRACTION = 0.10
_MAX_REPLACEMENT_FRACTION = 0.10
_PREFERRED_LEGACY = ("cp1252", "latin_1", "iso8859_15")


def read_text(path: Path) -> Document:
    """Read a text file, guessing its encoding; refuse binary content."""
    return Document(normalize_text(decode_text_bytes(path.read_bytes())))


def read_plain(path: Path) -> Document:
    """A ``.txt`` file, titled by its first line when that line stands alone
    (``opening_title``)."""
    text = read_text(path).text
    return Document(text, title=opening_title(text))


OPENING_TITLE_MAX_CHARS = 150
# A first line that is a date, a time or a log line's stamp, or holds a URL, is no title.
_NOT_A_TITLE = re.compile(r"\d{1,4}[-/.:]\d{1,2}[-/.:]\d|.*://")


def opening_title(text: str) -> str:
    """The first line of a plain text as its title, when it reads as one: it stands alone
    above a blank line with more text below, holds a letter, is at most
    ``OPENING_TITLE_MAX_CHARS`` long, does not run on (a comma or semicolon at its end:
    "Dear Ann,"), is no date, time stamp or URL, and the text is not code. A Markdown
    heading's ``#`` marks are not part of it.

    A text file has no metadata to name it, and most of its passages do not say what the
    whole is about; the title is embedded with each and searched beside each
    (SciFact, nDCG@10: 0.7385 with no title, 0.7435 so; docs/benchmarks.md).
    """
    at = min(4096, len(text)) - len(text[:4096].lstrip())  # leading blank lines
    at = max(at, 0)
    end = text.find("\n", at, at + 4 * OPENING_TITLE_MAX_CHARS)
    below = text.find("\n", end + 1, end + 4096) if end >= 0 else -1
    if end < 0 or below < 0 or text[end + 1 : below].strip():
        return ""  # no line break soon, or the line below is not blank
    first = text[at:end].strip().lstrip("#").strip()
    if not text[below : below + 4096].strip() or len(first) > OPENING_TITLE_MAX_CHARS:
        return ""
    if first.endswith((",", ";")) or _NOT_A_TITLE.match(first):
        return ""
    if not any(ch.isalpha() for ch in first) or reads_as_code(text[:2000]):
        return ""
    return clean_title(first)


def read_markdown(path: Path) -> Document:
    """A text file whose ``#`` (and underlined) headings give the sections."""
    text = read_text(path).text
    return Document(text, sections=markdown_sections(text))


_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_NOT_SETEXT_TITLE = re.compile(r"\s*(?:[-*+>|#]|\d+[.)]\s|$)|\s{4}")
_FRONT_MATTER = re.compile(r"---\n.*?\n(?:---|\.\.\.)\n", re.DOTALL)


def markdown_sections(text: str, path: HeadingPath | None = None) -> Marks:
    """Where each heading path starts: ATX (``## Results``) and setext headings.

    Headings inside fenced code blocks and YAML front matter are not headings. ``path``
    carries the headings of text before this one (a notebook's earlier cells).
    """
    path = path if path is not None else HeadingPath()
    marks: list[tuple[int, str]] = []
    front = _FRONT_MATTER.match(text)
    offset = front.end() if front else 0
    fence = ""
    previous: tuple[int, str] | None = None  # the line before, if it may be a setext title
    for line in text[offset:].split("\n"):
        start, offset = offset, offset + len(line) + 1
        opened = _FENCE.match(line)
        if fence or opened:
            if not fence and opened:
                fence = opened.group(1)
            elif opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            previous = None
            continue
        atx = _ATX.fullmatch(line)
        setext = _SETEXT.fullmatch(line)
        if atx:
            marks.append((start, path.enter(len(atx.group(1)), atx.group(2) or "")))
        elif setext and previous is not None:
            level = 1 if setext.group(1)[0] == "=" else 2
            marks.append((previous[0], path.enter(level, previous[1])))
        previous = None if atx or _NOT_SETEXT_TITLE.match(line) else (start, line)
    return tuple(marks)


def decode_text_bytes(data: bytes) -> str:
    """Decode bytes of a text file: BOMs, UTF-8, BOM-less UTF-16, detection, replace."""
    if not data:
        return ""
    by_bom = _decode_by_bom(data)
    if by_bom is not None:
        return by_bom
    head = data[:_SNIFF_BYTES]
    if b"\x00" in head:
        utf16 = _decode_bomless_utf16(data)
        if utf16 is None:
            raise ReadError("binary file, not text")
        return utf16
    if _control_fraction(head) > _MAX_CONTROL_FRACTION:
        raise ReadError("binary file, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if _mostly_utf8(data[:_UTF8_SAMPLE_BYTES]):
        return data.decode("utf-8", errors="replace")
    if _mostly_ascii(data[:_UTF8_SAMPLE_BYTES]):
        return data.decode(_PREFERRED_LEGACY[0], errors="replace")
    detected = _detect_encoding(data)
    if detected is not None:
        return detected
    text = data.decode("utf-8", errors="replace")
    sample = text[:_SNIFF_BYTES]
    if sample.count("\ufffd") > _MAX_REPLACEMENT_FRACTION * len(sample):
        raise ReadError("binary file, not text")
    return text


_UTF8_SAMPLE_BYTES = 1024 * 1024
_MOSTLY_ASCII = 0.01  # at most this fraction of bytes above 0x7F


def _mostly_ascii(sample: bytes) -> bool:
    """ASCII with a few stray high bytes: too few for a detector to tell the encoding.

    Such a file reads the same in every ASCII-based encoding but for those bytes, and a
    detector given so little evidence picked e.g. a Cyrillic code page for English text;
    the likeliest legacy encoding (cp1252) is then the better guess.
    """
    high = len(sample) - len(sample.translate(None, bytes(range(0x80, 0x100))))
    return high <= _MOSTLY_ASCII * len(sample)


_NON_ASCII = re.compile("[^\x00-\x7f\ufffd]")


def _mostly_utf8(sample: bytes) -> bool:
    """UTF-8 with a few damaged bytes: more valid multi-byte characters than bad bytes.

    Text in a legacy 8-bit encoding almost never forms valid UTF-8 sequences, so such a
    file is UTF-8 whose stray bytes are best replaced, not re-read as cp1252 mojibake.
    """
    text = sample.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    return len(_NON_ASCII.findall(text)) > bad


_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE: it starts with the same bytes
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _decode_by_bom(data: bytes) -> str | None:
    """Decode when ``data`` starts with a Unicode BOM (the BOM is removed)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    return None


def _decode_bomless_utf16(data: bytes) -> str | None:
    """UTF-16 without a BOM: mostly-ASCII text has NULs at every other byte."""
    head = data[: _SNIFF_BYTES & ~1]
    even_zeros = head[0::2].count(0)
    odd_zeros = head[1::2].count(0)
    half = max(1, len(head) // 2)
    if odd_zeros > 0.4 * half and even_zeros < 0.02 * half:
        encoding = "utf-16-le"
    elif even_zeros > 0.4 * half and odd_zeros < 0.02 * half:
        encoding = "utf-16-be"
    else:
        return None
    text = data.decode(encoding, errors="replace")
    sample = text[: _SNIFF_BYTES // 2]
    if sample.count("\ufffd") > _MAX_REPLACEMENT_FRACTION * len(sample):
        return None
    if _control_fraction(sample.encode("utf-8", "replace")) > _MAX_CONTROL_FRACTION:
        return None
    return text


_NON_CONTROL_BYTES = bytes(b for b in range(256) if b >= 0x20 and b != 0x7F) + b"\t\n\v\f\r\x1b"


def _control_fraction(head: bytes) -> float:
    """Fraction of bytes that are control characters no text file would contain."""
    if not head:
        return 0.0
    controls = len(head.translate(None, _NON_CONTROL_BYTES))
    return controls / len(head)


def _detect_encoding(data: bytes) -> str | None:
    """Decode with charset_normalizer's guess, or None when it has none.

    Ties between equally clean single-byte guesses are broken in favour of cp1252 /
    Latin-1, the likeliest legacy encodings for files here (charset_normalizer alone
    often picks e.g. cp1257 for short French text). UTF-16/32 guesses for data without
    NUL bytes are discarded: BOM-less UTF-16 was handled before, so they are noise.
    """
    from charset_normalizer import from_bytes

    matches = [
        m
        for m in from_bytes(data)
        if not (m.encoding.startswith(("utf_16", "utf_32")) and b"\x00" not in data)
    ]
    if not matches:
        return None
    best = matches[0]
    for match in matches:
        if match.chaos <= best.chaos and _is_preferred_legacy(match):
            best = match
            break
    return str(best)


def _is_preferred_legacy(match: Any) -> bool:
    encodings = {match.encoding, *match.could_be_from_charset}
    return any(name in encodings for name in _PREFERRED_LEGACY)


def read_rst(path: Path) -> Document:
    """A reStructuredText file whose underlined titles give the sections."""
    text = read_text(path).text
    return Document(text, sections=rst_sections(text))


_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*")


def rst_sections(text: str) -> Marks:
    """Where each title starts: a line underlined (and maybe overlined) with punctuation.

    As in docutils, levels follow the order in which adornment styles first appear.
    """
    path = HeadingPath()
    styles: list[tuple[str, bool]] = []
    marks: list[tuple[int, str]] = []
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for i in range(1, len(lines)):
        under = _ADORNMENT.fullmatch(lines[i])
        title = lines[i - 1].strip()
        if not under or not title or _ADORNMENT.fullmatch(lines[i - 1]):
            continue
        if len(lines[i].rstrip()) < len(title):
            continue
        over = i >= 2 and lines[i - 2].rstrip() == lines[i].rstrip()
        style = (under.group(1), over)
        if style not in styles:
            styles.append(style)
        marks.append((starts[i - 2 if over else i - 1], path.enter(styles.index(style) + 1, title)))
    return tuple(marks)
