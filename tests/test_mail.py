"""E-mail messages: subject as title, head and body, attachments read as parts of the message."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers import Document, read_document
from micro_rag_mcp.text.chunking import Locator
from tests.docfactory import pdf_bytes
from tests.formatfactory import Slide, make_pptx


def read(path: Path) -> Document:
    return read_document(path, max_bytes=10**8)


def where(doc: Document, needle: str) -> tuple[str | None, str | None]:
    start = doc.text.index(needle)
    locate = Locator(doc.text, doc.page_starts, sections=doc.sections, locators=doc.locators)
    return locate.section(start), locate.where(start, start + len(needle))


def message(subject: str = "Crane repair: quote and schedule") -> EmailMessage:
    msg = EmailMessage()
    msg["Subject"] = subject
    msg["From"] = "Ada Lovelace <ada@example.org>"
    msg["To"] = "Harbour Office <office@example.org>"
    msg["Date"] = "Tue, 01 Dec 2026 10:00:00 +0000"
    return msg


def save(path: Path, msg: EmailMessage) -> Path:
    path.write_bytes(msg.as_bytes())
    return path


def test_head_and_the_plain_text_body_are_preferred_to_html(tmp_path: Path) -> None:
    msg = message()
    msg.set_content("The quote is attached.\nWork starts on Monday.")
    msg.add_alternative("<p>HTML twin of the body</p>", subtype="html")
    doc = read(save(tmp_path / "quote.eml", msg))
    assert doc.title == "Crane repair: quote and schedule"
    assert doc.text.startswith(
        "From: Ada Lovelace <ada@example.org>\nTo: Harbour Office <office@example.org>\n"
        "Date: Tue, 01 Dec 2026 10:00:00 +0000\n\nThe quote is attached.\nWork starts on Monday."
    )
    assert "HTML twin" not in doc.text


def test_an_html_only_body_goes_through_the_web_reader(tmp_path: Path) -> None:
    msg = message()
    msg.set_content(
        "<html><head><style>p{}</style></head><body><h1>Caf\xe9 menu</h1><p>Soup</p></body></html>",
        subtype="html",
        charset="iso-8859-1",
    )
    doc = read(save(tmp_path / "menu.eml", msg))
    assert "Café menu" in doc.text and "p{}" not in doc.text
    assert where(doc, "Soup") == ("Café menu", None)


def test_attachments_are_parts_with_their_own_locators(tmp_path: Path) -> None:
    msg = message()
    msg.set_content("See the two files.")
    pdf = pdf_bytes(["Quote page one", "Crane parts on page two"])
    msg.add_attachment(pdf, maintype="application", subtype="pdf", filename="quote.pdf")
    deck = make_pptx(tmp_path / "plan.pptx", [Slide("Plan", body=["Lift the boom"])])
    msg.add_attachment(
        deck.read_bytes(), maintype="application", subtype="octet-stream", filename="plan.pptx"
    )
    msg.add_attachment(b"\x00\x01binary", maintype="application", subtype="x-bin", filename="a.bin")
    doc = read(save(tmp_path / "files.eml", msg))
    assert where(doc, "See the two files.") == (None, None)
    assert where(doc, "Crane parts on page two") == (None, 'attachment "quote.pdf" page 2')
    assert where(doc, "Quote page one") == (None, 'attachment "quote.pdf" page 1')
    assert where(doc, "Lift the boom") == ("Plan", 'attachment "plan.pptx" slide 1')
    assert "binary" not in doc.text


def test_a_forwarded_message_is_read_as_its_head_and_body(tmp_path: Path) -> None:
    inner = message("Original question")
    inner.set_content("Can the crane lift ten tonnes?")
    outer = message("Fwd: Original question")
    outer.set_content("Forwarding this.")
    outer.add_attachment(inner)
    doc = read(save(tmp_path / "fwd.eml", outer))
    assert where(doc, "Can the crane lift") == (
        None,
        'attachment "attachment 1" "Original question"',
    )


def test_an_unreadable_attachment_costs_only_itself(tmp_path: Path) -> None:
    msg = message()
    msg.set_content("Body survives.")
    msg.add_attachment(b"not a pdf", maintype="application", subtype="pdf", filename="bad.pdf")
    doc = read(save(tmp_path / "bad.eml", msg))
    assert "Body survives." in doc.text and "bad.pdf" not in doc.text


@pytest.mark.parametrize("content", [b"", b"just some words\nwithout any header\n"])
def test_a_file_without_mail_headers_gets_a_reason(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "odd.eml"
    path.write_bytes(content)
    with pytest.raises(ReadError, match="not an e-mail message"):
        read(path)


def test_a_malformed_sender_is_kept_as_written_and_the_message_read(tmp_path: Path) -> None:
    path = tmp_path / "odd-sender.eml"
    path.write_bytes(
        b"From: =?utf-8?b?!!!?=\r\n"  # an encoded word that is not base64: email's IndexError
        b"To: Harbour Office <office@example.org>\r\n"
        b"Subject: Boiler check\r\n"
        b"\r\n"
        b"The pressure valve on pipe nine leaks.\r\n"
    )
    doc = read(path)
    assert doc.title == "Boiler check"
    assert doc.text == (
        "From: =?utf-8?b?!!!?=\nTo: Harbour Office <office@example.org>\n\n"
        "The pressure valve on pipe nine leaks.\n"
    )


@pytest.mark.parametrize("content_type", [b"multipart/mixed", b'multipart/mixed; boundary="x"'])
def test_a_multipart_body_without_its_boundary_is_read_as_text(
    tmp_path: Path, content_type: bytes
) -> None:
    path = tmp_path / "no-boundary.eml"
    path.write_bytes(
        b"From: ada@example.org\r\nSubject: Boiler check\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: " + content_type + b"\r\n"
        b"\r\n"
        b"The pressure valve on pipe nine leaks.\r\n"
    )
    doc = read(path)
    assert doc.text == "From: ada@example.org\n\nThe pressure valve on pipe nine leaks.\n"


def test_an_attachment_is_read_within_what_is_left_of_the_messages_time(
    tmp_path: Path,
) -> None:
    from micro_rag_mcp.ingest.readers import READERS
    from micro_rag_mcp.ingest.readers.document import DocumentBuilder
    from micro_rag_mcp.ingest.readers.guards import Budget
    from micro_rag_mcp.ingest.readers.mail import Attachments, _add_attachment

    msg = message()
    msg.set_content("See the quote.")
    pages = [f"Quote page {n}" for n in ("one", "two", "three")]
    msg.add_attachment(pdf_bytes(pages), maintype="application", subtype="pdf", filename="q.pdf")
    part = next(iter(msg.iter_attachments()))
    for spent, read_pages in ((False, pages), (True, pages[:1])):
        builder = DocumentBuilder()
        budget = Budget(-1.0 if spent else 3600.0)  # the message's time used up, or not
        attachments = Attachments(read_document, READERS)
        _add_attachment(builder, part, 1, tmp_path / "q.eml", budget, attachments)
        text = builder.build().text
        assert [p for p in pages if p in text] == read_pages
