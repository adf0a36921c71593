"""Turn a file on disk into normalized text.

One reader per supported suffix (``READERS``); ``read_document`` dispatches, enforces the
size limit and turns every failure into a ``ReadError`` whose message is a short,
human-readable reason. Heavy libraries are imported inside the readers so importing this
module stays cheap.
"""

from __future__ import annotations

import codecs
import logging
import re
import stat
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from micro_rag_mcp.errors import ReadError

logger = logging.getLogger(__name__)

MIB = 1024 * 1024

# PDF work bounds.
PDF_TIME_BUDGET_S = 60.0
PDF_MAX_PAGES = 10_000

# DOCX (zip) bounds.
DOCX_MAX_EXPANDED_BYTES = 200 * MIB
DOCX_MAX_RATIO = 100
DOCX_RATIO_MIN_BYTES = 10 * MIB
DOCX_MAX_ENTRIES = 10_000

# Text sniffing.
_SNIFF_BYTES = 8192
_MAX_CONTROL_FRACTION = 0.10
_MAX_REPLACEMENT_FRACTION = 0.10
_PREFERRED_LEGACY = ("cp1252", "latin_1", "iso8859_15")

# Document titles from metadata.
TITLE_MAX_CHARS = 200
_PLACEHOLDER_TITLES = frozenset({"untitled", "untitled document", "no title"})


@dataclass(frozen=True, slots=True)
class Document:
    """Extracted text; ``page_starts[i]`` is the offset where page i+1 begins (PDF only).

    ``title`` is the document's own title from its metadata (PDF ``Title``, DOCX core
    property), cleaned by ``clean_title``; "" when it has none worth showing.
    """

    text: str
    page_starts: tuple[int, ...] = ()
    title: str = ""


# --------------------------------------------------------------------------- normalizing

_NEWLINE_RE = re.compile(r"\r\n?|\v")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def normalize_text(text: str) -> str:
    """Unify newlines and drop control characters.

    ``\\r\\n``, ``\\r`` and ``\\v`` become ``\\n``; a form feed becomes ``\\n\\n`` (a page
    or section break); other C0 controls and DEL are dropped (``\\t`` and ``\\n`` kept);
    lone surrogates, which cannot be encoded as UTF-8, become U+FFFD.
    """
    text = _NEWLINE_RE.sub("\n", text).replace("\f", "\n\n")
    text = _CONTROL_RE.sub("", text)
    return _SURROGATE_RE.sub("\ufffd", text)


def clean_title(raw: object) -> str:
    """A metadata title fit to show: one line, whitespace collapsed, at most 200 characters.

    "" when ``raw`` is not a string, has no letter or digit, or is a placeholder a tool
    writes when the author gave none ("untitled").
    """
    if not isinstance(raw, str):
        return ""
    title = " ".join(normalize_text(raw).split())
    if not any(ch.isalnum() for ch in title) or title.casefold() in _PLACEHOLDER_TITLES:
        return ""
    return title[:TITLE_MAX_CHARS].rstrip()


def _short(exc: BaseException, limit: int = 200) -> str:
    """A one-line, bounded description of an exception."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    return message if len(message) <= limit else message[: limit - 1] + "…"


def _format_size(n: int) -> str:
    """``n`` bytes as a short human string (MB means MiB here)."""
    if n >= MIB:
        return f"{n / MIB:.3g} MB"
    return f"{n} bytes"


# --------------------------------------------------------------------------- dispatch


def read_document(path: Path, *, max_bytes: int, suffix: str | None = None) -> Document:
    """Read ``path`` with the reader for its suffix; every failure becomes ``ReadError``.

    ``suffix`` names the format when ``path`` has none of its own (an open descriptor's
    ``/proc/self/fd/N``).
    """
    suffix = (suffix if suffix is not None else path.suffix).lower()
    reader = READERS.get(suffix)
    if reader is None:
        raise ReadError(f"unsupported file type {suffix or '(no suffix)'!r}")
    _check_file(path, max_bytes)
    try:
        return reader(path)
    except ReadError:
        raise
    except OSError as e:
        raise ReadError(_os_reason(e)) from e
    except Exception as e:  # parsers raise many unrelated types; all mean "unreadable"
        raise ReadError(f"could not parse {suffix[1:].upper()} file: {_short(e)}") from e


def _check_file(path: Path, max_bytes: int) -> None:
    """Refuse missing, non-regular and oversized files before any parsing."""
    try:
        st = path.stat()
    except OSError as e:
        raise ReadError(_os_reason(e)) from e
    if not stat.S_ISREG(st.st_mode):
        raise ReadError("not a regular file")
    if st.st_size > max_bytes:
        raise ReadError(
            f"file is {_format_size(st.st_size)}, larger than the {_format_size(max_bytes)} limit"
        )


def _os_reason(e: OSError) -> str:
    return f"cannot read file: {e.strerror or _short(e)}"


# --------------------------------------------------------------------------- plain text


def read_text(path: Path) -> Document:
    """Read a ``.txt``/``.md`` file, guessing its encoding; refuse binary content."""
    return Document(normalize_text(decode_text_bytes(path.read_bytes())))


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
    detected = _detect_encoding(data)
    if detected is not None:
        return detected
    text = data.decode("utf-8", errors="replace")
    sample = text[:_SNIFF_BYTES]
    if sample.count("\ufffd") > _MAX_REPLACEMENT_FRACTION * len(sample):
        raise ReadError("binary file, not text")
    return text


_UTF8_SAMPLE_BYTES = 1024 * 1024
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


# --------------------------------------------------------------------------- PDF


def read_pdf(
    path: Path,
    *,
    time_budget: float = PDF_TIME_BUDGET_S,
    max_pages: int = PDF_MAX_PAGES,
) -> Document:
    """Extract text page by page; pages joined by a blank line, offsets in ``page_starts``.

    A page that fails is logged and left empty. Extraction stops (with a warning) after
    ``max_pages`` pages or once ``time_budget`` seconds have passed; the budget is checked
    between pages, so a single pathological page can still take long. The file is read
    through one open stream, never reopened by name (``path`` may be a descriptor's
    ``/proc/self/fd/N``).
    """
    with open(path, "rb") as stream:
        pdf = _open_pdf(stream)
        try:
            texts = _extract_pages(pdf, path, time_budget, max_pages)
            title = _pdf_title(pdf, path)
        finally:
            pdf.close()
    if not any(texts):
        raise ReadError("no extractable text (scanned PDF without a text layer?)")
    return _join_pages(texts, title)


def _open_pdf(stream: BinaryIO) -> Any:
    """Open with pdfium, which tries the empty password on an encrypted file by itself."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    try:
        return pdfium.PdfDocument(stream)
    except pdfium.PdfiumError as e:
        if e.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            raise ReadError("encrypted PDF (needs a password)") from e
        reasons = {
            pdfium_c.FPDF_ERR_SUCCESS: "no pages",
            pdfium_c.FPDF_ERR_FORMAT: "damaged or not a PDF",
            pdfium_c.FPDF_ERR_SECURITY: "unsupported encryption",
        }
        raise ReadError(f"corrupt or unsupported PDF: {reasons.get(e.err_code, _short(e))}") from e


def _extract_pages(pdf: Any, path: Path, time_budget: float, max_pages: int) -> list[str]:
    """Normalized, stripped text of each page, within the page and time bounds."""
    count = len(pdf)
    if count > max_pages:
        logger.warning("%s: %d pages, extracting only the first %d", path, count, max_pages)
        count = max_pages
    deadline = time.monotonic() + time_budget
    texts: list[str] = []
    for index in range(count):
        if index > 0 and time.monotonic() > deadline:
            logger.warning(
                "%s: stopped after %d of %d pages (time budget of %gs used up)",
                path,
                index,
                count,
                time_budget,
            )
            break
        texts.append(_page_text(pdf, index, path))
    return texts


def _page_text(pdf: Any, index: int, path: Path) -> str:
    """Text of one page, or "" (with a warning) when that page cannot be extracted.

    pdfium ends lines with ``\\r\\n`` (normalized to ``\\n``) and writes a hyphen it
    takes for a line-end word break as U+FFFE, joining the two lines; it becomes ``-``
    again, as printed, since it is as often part of a compound ("pre-tax") as a break.
    """
    try:
        with closing(pdf[index]) as page, closing(page.get_textpage()) as textpage:
            raw = str(textpage.get_text_range())
    except Exception as e:  # one bad page must not lose the whole document
        logger.warning("%s: page %d could not be extracted: %s", path, index + 1, _short(e))
        return ""
    return normalize_text(raw.replace("\ufffe", "-")).strip()


def _pdf_title(pdf: Any, path: Path) -> str:
    """The ``Title`` of the document information dictionary, cleaned; "" if unreadable."""
    try:
        raw = pdf.get_metadata_value("Title")
    except Exception as e:  # the title is a nicety: never lose the text over it
        logger.warning("%s: title could not be read: %s", path, _short(e))
        return ""
    return clean_title(raw)


def _join_pages(texts: list[str], title: str) -> Document:
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 2
    return Document("\n\n".join(texts), tuple(starts), title)


# --------------------------------------------------------------------------- DOCX


def read_docx(
    path: Path,
    *,
    max_expanded_bytes: int = DOCX_MAX_EXPANDED_BYTES,
    max_ratio: int = DOCX_MAX_RATIO,
    ratio_min_bytes: int = DOCX_RATIO_MIN_BYTES,
) -> Document:
    """Paragraphs and tables of the body in document order, separated by blank lines.

    Table rows become one line each, cells joined by `` | ``. The archive is vetted
    (see ``check_docx_archive``) before python-docx expands anything.
    """
    check_docx_archive(
        path,
        max_expanded_bytes=max_expanded_bytes,
        max_ratio=max_ratio,
        ratio_min_bytes=ratio_min_bytes,
    )
    import docx

    try:
        document = docx.Document(str(path))
    except OSError:
        raise
    except Exception as e:  # python-docx / lxml raise many types for malformed packages
        raise ReadError(f"not a valid DOCX: {_short(e)}") from e
    blocks = (block for block in _block_texts(document.element.body) if block.strip())
    return Document(normalize_text("\n\n".join(blocks)), title=_docx_title(document, path))


def _docx_title(document: Any, path: Path) -> str:
    """The core properties' title, cleaned; "" when the package has no core properties.

    python-docx invents core properties titled "Word Document" for a package without
    them, so their presence is checked first.
    """
    from docx.opc.constants import RELATIONSHIP_TYPE

    package = document.part.package
    try:
        package.part_related_by(RELATIONSHIP_TYPE.CORE_PROPERTIES)
    except KeyError:
        return ""
    try:
        raw = package.core_properties.title
    except Exception as e:  # the title is a nicety: never lose the text over it
        logger.warning("%s: title could not be read: %s", path, _short(e))
        return ""
    return clean_title(raw)


def check_docx_archive(
    path: Path,
    *,
    max_expanded_bytes: int = DOCX_MAX_EXPANDED_BYTES,
    max_ratio: int = DOCX_MAX_RATIO,
    ratio_min_bytes: int = DOCX_RATIO_MIN_BYTES,
) -> None:
    """Refuse non-zips, zip bombs and archives without ``word/document.xml``.

    Only the central directory is read. The declared sizes can be trusted as upper
    bounds: Python's zipfile never yields more than ``ZipInfo.file_size`` bytes.
    """
    if not zipfile.is_zipfile(path):
        raise ReadError("not a valid DOCX (not a zip archive)")
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as e:
        raise ReadError(f"not a valid DOCX (damaged zip archive: {_short(e)})") from e
    if len(infos) > DOCX_MAX_ENTRIES:
        raise ReadError(f"refused: archive has {len(infos)} entries (zip bomb?)")
    total = sum(info.file_size for info in infos)
    if total > max_expanded_bytes:
        raise ReadError(
            f"refused: archive expands to {_format_size(total)}, over the "
            f"{_format_size(max_expanded_bytes)} limit (zip bomb?)"
        )
    for info in infos:
        if info.file_size > ratio_min_bytes and info.file_size > max_ratio * max(
            1, info.compress_size
        ):
            raise ReadError(
                f"refused: archive expands to {_format_size(info.file_size)} from "
                f"{_format_size(info.compress_size)} in {info.filename} (zip bomb?)"
            )
    if "word/document.xml" not in {info.filename for info in infos}:
        raise ReadError("not a valid DOCX (no word/document.xml)")


def _w(tag: str) -> str:
    """Clark-notation name of a WordprocessingML element."""
    return "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}" + tag


_P, _TBL, _TR, _TC = _w("p"), _w("tbl"), _w("tr"), _w("tc")
_WRAPPERS = (_w("sdt"), _w("customXml"))
_SDT_CONTENT = _w("sdtContent")
_T, _TAB, _BR, _CR, _TABS = _w("t"), _w("tab"), _w("br"), _w("cr"), _w("tabs")


def _block_texts(container: Any) -> Iterator[str]:
    """Text of each paragraph / table directly in ``container`` (body or cell), in order."""
    for child in _content_children(container):
        if child.tag == _P:
            yield _paragraph_text(child)
        elif child.tag == _TBL:
            yield _table_text(child)


def _content_children(element: Any) -> Iterator[Any]:
    """Children of ``element``, looking through content controls and custom XML."""
    for child in element:
        if child.tag in _WRAPPERS:
            content = child.find(_SDT_CONTENT)
            yield from _content_children(content if content is not None else child)
        else:
            yield child


def _paragraph_text(paragraph: Any) -> str:
    """Text of a ``w:p`` including hyperlinks, tracked insertions and text boxes."""
    parts: list[str] = []
    for el in paragraph.iter(_T, _TAB, _BR, _CR):
        if el.tag == _T:
            parts.append(el.text or "")
        elif el.tag == _TAB:
            if el.getparent() is not None and el.getparent().tag != _TABS:  # not a tab stop
                parts.append("\t")
        else:
            parts.append("\n")
    return "".join(parts)


def _table_text(table: Any) -> str:
    """One line per non-empty row, cells joined by `` | ``; nested tables flattened."""
    lines: list[str] = []
    for row in _content_children(table):
        if row.tag != _TR:
            continue
        cells = [_cell_text(cell) for cell in _content_children(row) if cell.tag == _TC]
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)


def _cell_text(cell: Any) -> str:
    """All text of a cell on one line."""
    return " ".join(" ".join(block.split()) for block in _block_texts(cell) if block.strip())


# --------------------------------------------------------------------------- registry

# Raw readers by lowercase suffix. They raise ReadError for the failures they recognize but
# may let other exceptions through; read_document is the entry point that converts all.
READERS: dict[str, Callable[[Path], Document]] = {
    ".txt": read_text,
    ".md": read_text,
    ".pdf": read_pdf,
    ".docx": read_docx,
}
