"""The new formats through the whole engine: indexed by default, cited by their locators."""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from micro_rag_mcp.ingest.readers.ocr import ocr_installed
from micro_rag_mcp.local.engine import Engine
from tests.docfactory import pdf_bytes
from tests.formatfactory import make_odf, make_scanned_pdf

pytestmark = pytest.mark.slow


def test_opendocument_and_mail_are_indexed_and_cited(engine: Engine, data: Path) -> None:
    make_odf(data / "notes.odt", "text", "<text:h>Boiler</text:h><text:p>Pressure valve</text:p>")
    msg = EmailMessage()
    msg["Subject"], msg["From"], msg["To"] = "Inspection", "ada@example.org", "bob@example.org"
    msg.set_content("The report is attached.")
    msg.add_attachment(
        pdf_bytes(["Cover", "Corroded flange on pipe nine"]),
        maintype="application",
        subtype="pdf",
        filename="report.pdf",
    )
    (data / "inspection.eml").write_bytes(msg.as_bytes())
    report = engine.reindex()
    assert report.files_added == 2 and not report.files_failed
    valve = engine.search("pressure valve", 1, 0.0).hits[0].chunk
    assert (valve.path, valve.section) == ("notes.odt", "Boiler")
    flange = engine.search("corroded flange", 1, 0.0).hits[0].chunk
    assert (flange.path, flange.locator) == ("inspection.eml", 'attachment "report.pdf" page 2')


@pytest.mark.skipif(
    not ocr_installed(),
    reason="the ocr extra is not installed (pip install -e '.[ocr]', Python 3.11 or 3.12 only)",
)
def test_a_recognized_page_keeps_its_page_and_says_ocr(engine: Engine, data: Path) -> None:
    make_scanned_pdf(data / "scan.pdf", [("Typed cover", []), ("", ["Harbour crane invoice"])])
    assert engine.reindex().files_added == 1
    hit = engine.search("harbour crane invoice", 1, 0.0).hits[0].chunk
    assert (hit.path, hit.page, hit.locator) == ("scan.pdf", 2, "OCR")
