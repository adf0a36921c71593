"""E-mail messages (``.eml``), parsed by the standard library's ``email`` package.

The subject is the document's title; the passage head names the sender, the recipients
and the date; the body is the plain-text part when there is one, else the HTML part
through the web reader. Attachments of an indexable format are read by their own reader
as parts of the message, each with the locator ``attachment "report.pdf"`` (followed by
the page, slide or sheet inside it). An attachment is handed to its reader from memory
(``os.memfd_create``), never written to disk; where memory files do not exist,
attachments are left out with a warning. A forwarded message is read as its head and
body (its own attachments are left out), so nesting costs nothing. The registry hands
the reader its own ``read_document`` and suffixes (``Attachments``), so this module never
imports the package it belongs to.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
from collections.abc import Collection
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from pathlib import Path, PurePath
from typing import Protocol

from micro_rag_mcp.core.errors import ReadError
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
_HEAD_FIELDS = ("From", "To", "Cc", "Date")


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
    message = BytesParser(policy=policy.default).parsebytes(path.read_bytes())
    headed = any(name in message for name in ("From", "To", "Subject", "Date"))  # not parsed
    if not isinstance(message, EmailMessage) or not headed:
        raise ReadError("not an e-mail message (no From, To, Subject or Date header)")
    budget = Budget(time_budget)
    builder = DocumentBuilder()
    _add_message(builder, message, budget, path)
    for count, part in enumerate(message.iter_attachments(), 1):
        if count > MAX_ATTACHMENTS or budget.spent():
            logger.warning("%s: attachments after the %dth left out (bounds)", path, count - 1)
            break
        _add_attachment(builder, part, count, path, budget, attachments)
    return builder.build(clean_title(_header(message, "Subject")))


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
    builder: DocumentBuilder, message: EmailMessage, budget: Budget, path: Path
) -> None:
    head = [f"{name}: {value}" for name in _HEAD_FIELDS if (value := _header(message, name))]
    builder.add("\n".join(head))
    body = message.get_body(preferencelist=("plain", "html"))
    if body is None:
        if message.get_content_maintype() == "multipart" and not message.is_multipart():
            # No boundary parameter, or none found in the body: the parser kept one text.
            logger.warning("%s: a multipart body without its boundary, read as text", path)
            builder.add(_text_content(message))
        return
    if body.get_content_subtype() == "html":  # decoded by its charset, then read as UTF-8
        page = b'<meta charset="utf-8">' + _text_content(body).encode("utf-8", "replace")
        add_html(builder, page, HeadingPath(), budget, path)
    else:
        builder.add(_text_content(body))


def _text_content(part: Message) -> str:
    """A text part's content, decoded by its charset or, failing that, by detection."""
    if isinstance(part, EmailMessage):
        with contextlib.suppress(LookupError, UnicodeError, AttributeError):
            return str(part.get_content())
    payload = part.get_payload(decode=True)
    return decode_text_bytes(payload) if isinstance(payload, bytes) else ""


def _add_attachment(
    builder: DocumentBuilder,
    part: EmailMessage,
    number: int,
    path: Path,
    budget: Budget,
    attachments: Attachments,
) -> None:
    name = (part.get_filename() or f"attachment {number}").replace('"', "'")
    label = f'attachment "{name}"'
    if part.get_content_type() == "message/rfc822":
        inner = part.get_payload()
        if isinstance(inner, list) and inner and isinstance(inner[0], EmailMessage):
            subject = _header(inner[0], "Subject")
            builder.locator(f'{label} "{subject}"' if subject else label, hard=True)
            builder.section("")
            _add_message(builder, inner[0], budget, path)
        return
    suffix = PurePath(name).suffix.lower()
    data = part.get_payload(decode=True)
    if not suffix or not isinstance(data, bytes) or not data:
        return
    if suffix not in attachments.suffixes or suffix == ".eml":
        return
    if not hasattr(os, "memfd_create"):
        logger.warning("%s: %s left out (no memory files on this system)", path, label)
        return
    fd = os.memfd_create("attachment", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        with within(budget):  # in what is left of the message's time
            doc = attachments.read(Path(f"/proc/self/fd/{fd}"), max_bytes=len(data), suffix=suffix)
    except ReadError as e:
        logger.warning("%s: %s could not be read: %s", path, label, e)
        return
    finally:
        os.close(fd)
    add_part(builder, label, doc)


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
