"""E-mail messages: subject as title, head and body, attachments read as parts of the message."""

from __future__ import annotations

import base64
import re
from email.message import EmailMessage
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers import Document, read_document
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.text.chunking import Locator
from tests.docfactory import make_docx, pdf_bytes
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
        "Subject: Crane repair: quote and schedule\n"
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
    assert "Body survives." in doc.text and "not a pdf" not in doc.text
    assert where(doc, "Attachments: bad.pdf") == (None, None)


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
        "Subject: Boiler check\nFrom: =?utf-8?b?!!!?=\nTo: Harbour Office <office@example.org>\n\n"
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
    assert doc.text == (
        "Subject: Boiler check\nFrom: ada@example.org\n\nThe pressure valve on pipe nine leaks.\n"
    )


def test_an_attachment_is_read_within_what_is_left_of_the_messages_time(
    tmp_path: Path,
) -> None:
    from micro_rag_mcp.ingest.readers import READERS
    from micro_rag_mcp.ingest.readers.document import DocumentBuilder
    from micro_rag_mcp.ingest.readers.guards import Budget
    from micro_rag_mcp.ingest.readers.mail import Attachments, _add_attachment, _Reading

    msg = message()
    msg.set_content("See the quote.")
    pages = [f"Quote page {n}" for n in ("one", "two", "three")]
    msg.add_attachment(pdf_bytes(pages), maintype="application", subtype="pdf", filename="q.pdf")
    part = next(iter(msg.iter_attachments()))
    for spent, read_pages in ((False, pages), (True, pages[:1])):
        builder = DocumentBuilder()
        budget = Budget(-1.0 if spent else 3600.0)  # the message's time used up, or not
        attachments = Attachments(read_document, READERS)
        _add_attachment(builder, part, 1, _Reading(budget, tmp_path / "q.eml", attachments), 0)
        text = builder.build().text
        assert [p for p in pages if p in text] == read_pages


def test_an_html_only_message_has_its_subject_and_page_title_in_its_text(tmp_path: Path) -> None:
    page = (
        b"<html><head><title>Fun facts about e-mail</title></head><body>"
        b"<p>The first emoticon was proposed by Scott Fahlman in 1982.</p></body></html>"
    )
    path = tmp_path / "html-only.eml"
    path.write_bytes(  # as mailers send it: one HTML part, base64, no plain-text twin
        b"MIME-Version: 1.0\r\nFrom: sender@example.com\r\nTo: recipient@example.com\r\n"
        b"Date: Tue, 01 Oct 2024 12:34:56 -0500\r\nSubject: Example HTML Only MIME Email\r\n"
        b'Content-Type: text/html; charset="ISO-8859-1"\r\nContent-Transfer-Encoding: base64\r\n'
        b"\r\n" + base64.encodebytes(page)
    )
    doc = read(path)
    assert doc.title == "Example HTML Only MIME Email"
    assert doc.text == (
        "Subject: Example HTML Only MIME Email\nTitle: Fun facts about e-mail\n"
        "From: sender@example.com\nTo: recipient@example.com\n"
        "Date: Tue, 01 Oct 2024 12:34:56 -0500\n\n"
        "The first emoticon was proposed by Scott Fahlman in 1982."
    )


def test_a_question_naming_the_subject_and_the_attachments_finds_the_message(
    engine: Engine, data: Path, tmp_path: Path
) -> None:
    msg = message("test-localhost")
    msg.set_content("Hello, this is a test with two files.")
    report = make_docx(tmp_path / "report.docx", ["Harbour figures rose in the third quarter."])
    msg.add_attachment(
        report.read_bytes(),
        maintype="application",
        subtype="vnd.openxmlformats-officedocument.wordprocessingml.document",
        filename="report.docx",
    )
    msg.add_attachment(
        pdf_bytes(["Crane downtime fell by a third."]),
        maintype="application",
        subtype="pdf",
        filename="summary.pdf",
    )
    save(data / "test-localhost.eml", msg)
    (data / "tips.md").write_text("# Word tips\n\nSave a Word file as PDF before you e-mail it.\n")
    (data / "mail.txt").write_text("An e-mail to say the test of the mail server passed.\n")
    assert engine.reindex().files_added == 3
    hit = (
        engine.search(
            "What do the Word and PDF attachments of the test-localhost email say?", 1, 0.0
        )
        .hits[0]
        .chunk
    )
    assert (hit.path, hit.locator) == ("test-localhost.eml", None)
    assert "Attachments: report.docx (Word), summary.pdf" in hit.text
    assert "Hello, this is a test with two files." in hit.text


def forwarded_in_base64(inner: EmailMessage) -> bytes:
    """A message forwarding ``inner`` as a base64 ``message/rfc822`` part (as Outlook may)."""
    return (
        b"From: ada@example.org\r\nSubject: Fwd: Original question\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="BB"\r\n\r\n--BB\r\n'
        b"Content-Type: text/plain\r\n\r\nForwarding this.\r\n--BB\r\n"
        b"Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n"
        b'Content-Disposition: attachment; filename="original.eml"\r\n\r\n'
        + base64.encodebytes(inner.as_bytes())
        + b"\r\n--BB--\r\n"
    )


def test_a_forwarded_message_in_base64_is_decoded_and_read_with_its_attachments(
    tmp_path: Path,
) -> None:
    inner = message("Original question")
    inner.set_content("Can the crane lift ten tonnes?")
    inner.add_attachment(
        pdf_bytes(["Load chart of the crane"]),
        maintype="application",
        subtype="pdf",
        filename="chart.pdf",
    )
    inner.add_attachment(
        b"Log line one\nLog line two\n",
        maintype="application",
        subtype="octet-stream",
        filename="crane.log",
    )
    inner.add_attachment(
        bytes(range(256)) * 40, maintype="image", subtype="x-raw", filename="a.raw"
    )
    path = tmp_path / "fwd.eml"
    path.write_bytes(forwarded_in_base64(inner))
    doc = read(path)
    assert where(doc, "Can the crane lift") == (
        None,
        'attachment "original.eml" "Original question"',
    )
    assert "Attachments: chart.pdf, crane.log, a.raw" in doc.text
    assert where(doc, "Load chart of the crane") == (None, 'attachment "chart.pdf" page 1')
    assert where(doc, "Log line two") == (None, 'attachment "crane.log"')
    assert not re.search(r"[A-Za-z0-9+/=]{40}", doc.text)  # no base64 left as words


def test_forwarded_messages_are_read_only_so_deep(tmp_path: Path) -> None:
    from micro_rag_mcp.ingest.readers.mail import MAX_NESTING

    msg = message("level 0")
    msg.set_content("words of level 0")
    for level in range(1, MAX_NESTING + 2):
        outer = message(f"level {level}")
        outer.set_content(f"words of level {level}")
        outer.add_attachment(msg)
        msg = outer
    doc = read(save(tmp_path / "deep.eml", msg))
    top = MAX_NESTING + 1
    read_levels = [n for n in range(top + 1) if f"words of level {n}\n" in doc.text]
    assert read_levels == list(range(top - MAX_NESTING + 1, top + 1))
