"""E-mail messages (``.eml``), parsed by the standard library's ``email`` package.

The subject is the document's title; the passage head names the subject, the sender,
the recipients, the date and the attachments' names, so a question naming a message and
its files finds the message's own words; the body is the plain-text part when there is
one, else the HTML part through the web reader (its ``<title>`` in the head when it says
more than the subject). Attachments of an indexable format are read by their own reader
as parts of the message, each with the locator ``attachment "report.pdf"`` (followed by
the page, slide or sheet inside it); a text part of no such format is read as text. An
attachment is handed to its reader from memory (``os.memfd_create``), never written to
disk; where memory files do not exist, attachments are left out with a warning. A
forwarded message (``message/rfc822``, base64-encoded too, or an ``.eml`` file) is read
like the message around it, attachments and all, down to ``MAX_NESTING`` levels; every
level shares the message's time budget and its ``MAX_ATTACHMENTS``. The registry hands
the reader its own ``read_document`` and suffixes (``Attachments``), so this module never
imports the package it belongs to.
"""

from __future__ import annotations

import binascii
import bisect
import contextlib
import logging
import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from pathlib import Path, PurePath
from typing import Protocol

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.core.formats import FORMATS
from micro_rag_mcp.ingest.readers.document import (
    Document,
    DocumentBuilder,
    HeadingPath,
    clean_title,
)
from micro_rag_mcp.ingest.readers.guards import Budget, short, within
from micro_rag_mcp.ingest.readers.text import decode_text_bytes
from micro_rag_mcp.ingest.readers.web import add_html

logger = logging.getLogger(__name__)

MAIL_TIME_BUDGET_S = 60.0
MAX_ATTACHMENTS = 50
MAX_NESTING = 5  # a message forwarded in a message... read this many levels deep
NAME_MAX_CHARS = 200  # of an attachment's name in the head
_HEAD_FIELDS = ("Subject", "From", "To", "Cc", "Date")
# An attachment's format by its suffix, named in the head ("report.docx (Word)").
_FORMAT_NAMES = {suffix: fmt.name for fmt in FORMATS for suffix in fmt.suffixes}


class PartReader(Protocol):
    def __call__(self, path: Path, *, max_bytes: int, suffix: str) -> Document: ...


@dataclass(frozen=True, slots=True)
class Attachments:
    """How an attachment is read: the registry's reader and the suffixes it reads."""

    read: PartReader
    suffixes: Collection[str]


NO_ATTACHMENTS = Attachments(lambda path, *, max_bytes, suffix: Document(""), ())


def read_eml(
    path: Path,
    *,
    attachments: Attachments = NO_ATTACHMENTS,
    time_budget: float = MAIL_TIME_BUDGET_S,
) -> Document:
    """The message's head and body, then each attachment ``attachments`` reads as a part."""
    message = _parse(path.read_bytes())
    if message is None:
        raise ReadError("not an e-mail message (no From, To, Subject or Date header)")
    builder = DocumentBuilder()
    _add_mail(builder, message, _Reading(Budget(time_budget), path, attachments), 0)
    return builder.build(clean_title(_header(message, "Subject")))


def _parse(data: bytes) -> EmailMessage | None:
    """The message in ``data``; None when it has none of the headers a message has."""
    message = BytesParser(policy=policy.default).parsebytes(data)
    headed = any(name in message for name in ("From", "To", "Subject", "Date"))  # not parsed
    return message if isinstance(message, EmailMessage) and headed else None


@dataclass(slots=True)
class _Reading:
    """What a message and the messages forwarded in it share: time and attachments."""

    budget: Budget
    path: Path
    attachments: Attachments
    seen: int = 0
    stopped: bool = False

    def next_attachment(self) -> bool:
        """Count one more attachment: whether it is within the bounds (warned once if not)."""
        self.seen += 1
        if self.seen <= MAX_ATTACHMENTS and not self.budget.spent():
            return True
        if not self.stopped:
            logger.warning(
                "%s: attachments after the %dth left out (bounds)", self.path, self.seen - 1
            )
            self.stopped = True
        return False


def _add_mail(
    builder: DocumentBuilder, message: EmailMessage, reading: _Reading, depth: int
) -> None:
    """A message: its head and body, then its attachments."""
    attachments = list(message.iter_attachments()) if message.is_multipart() else []
    _add_message(builder, message, attachments, reading.budget, reading.path)
    for number, part in enumerate(attachments, 1):
        if not reading.next_attachment():
            break
        _add_attachment(builder, part, number, reading, depth)


def _header(message: Message, name: str) -> str:
    """A header as text, whitespace collapsed; "" when absent.

    A header the parser fails on (``From: =?utf-8?b?!!!?=`` raises IndexError inside
    ``email``) is given as written.
    """
    try:
        value = message.get(name)
    except Exception as e:  # a malformed header must not lose the message
        logger.warning("header %s could not be parsed, kept as written: %s", name, short(e))
        value = _as_written(message, name)
    return " ".join(str(value).split()) if value is not None else ""


def _as_written(message: Message, name: str) -> str:
    """The first ``name`` header's raw value (undecodable bytes replaced); "" when absent."""
    for key, raw in message.raw_items():
        if key.lower() == name.lower():
            return str(raw).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return ""


def _add_message(
    builder: DocumentBuilder,
    message: EmailMessage,
    attachments: list[EmailMessage],
    budget: Budget,
    path: Path,
) -> None:
    """The head (subject, sender, recipients, date, attachments' names), then the body."""
    head = [f"{name}: {value}" for name in _HEAD_FIELDS if (value := _header(message, name))]
    names = [name for part in attachments[:MAX_ATTACHMENTS] if (name := _part_name(part))]
    if names:
        head.append(f"Attachments: {', '.join(names)}")
    body = message.get_body(preferencelist=("plain", "html"))
    if body is not None and body.get_content_subtype() == "html":
        page = DocumentBuilder()
        title = clean_title(add_html(page, _html_bytes(body), HeadingPath(), budget, path))
        if title and title.casefold() != _header(message, "Subject").casefold():
            head.insert(1, f"Title: {title}")
        builder.add("\n".join(head))
        html = page.build()
        builder.add(html.text, sections=html.sections)
        return
    builder.add("\n".join(head))
    if body is not None:
        builder.add(_text_content(body))
    elif message.get_content_maintype() == "multipart" and not message.is_multipart():
        # No boundary parameter, or none found in the body: the parser kept one text.
        logger.warning("%s: a multipart body without its boundary, read as text", path)
        builder.add(_text_content(message))


def _html_bytes(part: Message) -> bytes:
    """An HTML part decoded by its charset, as a page the web reader reads as UTF-8."""
    return b'<meta charset="utf-8">' + _text_content(part).encode("utf-8", "replace")


def _part_name(part: EmailMessage) -> str:
    """An attachment's name for the head: its file name and format ("report.docx (Word)"),
    or a forwarded message's subject in quotes; "" when it has neither."""
    name = " ".join(_file_name(part).split())[:NAME_MAX_CHARS]
    if not name and part.get_content_type() == "message/rfc822":
        inner = part.get_payload()
        if isinstance(inner, list) and inner and isinstance(inner[0], Message):
            subject = _header(inner[0], "Subject")[:NAME_MAX_CHARS]
            return f'"{subject}"' if subject else ""
    suffix = PurePath(name).suffix.lower()
    kind = _FORMAT_NAMES.get(suffix, "")
    return f"{name} ({kind})" if kind and kind.casefold() != suffix[1:] else name


def _text_content(part: Message) -> str:
    """A text part's content, decoded by its charset or, failing that, by detection."""
    if isinstance(part, EmailMessage):
        with contextlib.suppress(LookupError, UnicodeError, AttributeError):
            return str(part.get_content())
    payload = part.get_payload(decode=True)
    return decode_text_bytes(payload) if isinstance(payload, bytes) else ""


def _add_attachment(
    builder: DocumentBuilder, part: EmailMessage, number: int, reading: _Reading, depth: int
) -> None:
    """One attachment: a forwarded message, a file of a format read here, or text."""
    name = (_file_name(part) or f"attachment {number}").replace('"', "'")
    label = f'attachment "{name}"'
    forwarded = _forwarded(part, reading.path)
    if forwarded is not None:
        if depth + 1 >= MAX_NESTING:
            logger.warning(
                "%s: %s left out (forwarded more than %d deep)", reading.path, label, MAX_NESTING
            )
            return
        subject = _header(forwarded, "Subject")
        builder.locator(f'{label} "{subject}"' if subject else label, hard=True)
        builder.section("")
        _add_mail(builder, forwarded, reading, depth + 1)
        return
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes) or not data:
        return
    suffix = PurePath(_file_name(part)).suffix.lower()
    if suffix in reading.attachments.suffixes and suffix != ".eml":
        doc = _read_part(data, suffix, label, reading)
    else:
        doc = _text_part(part, data, reading)
    if doc is not None:
        add_part(builder, label, doc)


def _file_name(part: EmailMessage) -> str:
    """The part's file name; "" when it has none or its parameter cannot be parsed."""
    try:
        return part.get_filename() or ""
    except Exception:  # a malformed parameter: the part is still read by its type
        return ""


def _forwarded(part: EmailMessage, path: Path) -> EmailMessage | None:
    """The message a ``message/rfc822`` part (or an ``.eml`` file) holds; None if none.

    A forwarded message must be sent unencoded, but some mailers encode it in base64: the
    parser then sees a message with no head whose body is the encoded text (base64 has no
    colon), which is decoded and parsed here.
    """
    if part.get_content_type() != "message/rfc822":
        if PurePath(_file_name(part)).suffix.lower() != ".eml":
            return None
        data = part.get_payload(decode=True)
        return _parse(data) if isinstance(data, bytes) else None
    inner = part.get_payload()
    if not isinstance(inner, list) or not inner or not isinstance(inner[0], EmailMessage):
        return None
    if str(part.get("Content-Transfer-Encoding", "")).strip().lower() != "base64":
        return inner[0]
    try:
        return _parse(binascii.a2b_base64(inner[0].as_bytes()))
    except (binascii.Error, ValueError, LookupError, UnicodeError) as e:
        logger.warning("%s: a forwarded message could not be decoded: %s", path, short(e))
        return None


def _read_part(data: bytes, suffix: str, label: str, reading: _Reading) -> Document | None:
    """An attachment read by its format's reader, from memory; None if it cannot be."""
    if not hasattr(os, "memfd_create"):
        logger.warning("%s: %s left out (no memory files on this system)", reading.path, label)
        return None
    fd = os.memfd_create("attachment", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        with within(reading.budget):  # in what is left of the message's time
            part = Path(f"/proc/self/fd/{fd}")
            return reading.attachments.read(part, max_bytes=len(data), suffix=suffix)
    except ReadError as e:
        logger.warning("%s: %s could not be read: %s", reading.path, label, e)
        return None
    finally:
        os.close(fd)


def _text_part(part: EmailMessage, data: bytes, reading: _Reading) -> Document | None:
    """A part of no format read here, as text when it is text; None when it is not.

    Text is a ``text/*`` part, or any part whose bytes are UTF-8 with no control
    characters but line breaks and tabs (a log sent as ``application/octet-stream``).
    """
    builder = DocumentBuilder()
    if part.get_content_type() == "text/html":
        add_html(builder, _html_bytes(part), HeadingPath(), reading.budget, reading.path)
    elif part.get_content_maintype() == "text" and part.get_content_subtype() != "rtf":
        builder.add(_text_content(part))
    elif (text := _utf8_text(data)) is not None:
        builder.add(text)
    return builder.build() if builder.length else None


_BINARY_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def _utf8_text(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8 without binary control characters; else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if _BINARY_CONTROLS.search(text) else text


def add_part(builder: DocumentBuilder, label: str, doc: Document) -> None:
    """Append ``doc`` as a part named ``label``: its pages, locators and sections kept.

    Each stretch between two of the part's pages or locators is added under
    ``label page 2`` / ``label slide 4``; no passage spans two stretches.
    """
    cuts = sorted({0, *doc.page_starts, *(offset for offset, _ in doc.locators), *doc.breaks})
    for index, start in enumerate(cuts):
        end = cuts[index + 1] if index + 1 < len(cuts) else len(doc.text)
        inner = _mark_at(doc.locators, start)
        if doc.page_starts:
            page = f"page {bisect.bisect_right(doc.page_starts, start)}"
            inner = f"{page} {inner}" if inner else page
        builder.locator(f"{label} {inner}" if inner else label, hard=True)
        builder.section(_mark_at(doc.sections, start))
        inside = tuple((o - start, s) for o, s in doc.sections if start < o < end)
        builder.add(doc.text[start:end], sep="\n\n" if index == 0 else "", sections=inside)


def _mark_at(marks: tuple[tuple[int, str], ...], offset: int) -> str:
    """The label of the last mark at or before ``offset``; "" when none."""
    position = bisect.bisect_right([o for o, _ in marks], offset)
    return marks[position - 1][1] if position else ""
