"""PDF: text page by page with pdfium (pypdfium2), OCR for scanned pages, and the title."""

from __future__ import annotations

import logging
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers.document import (
    Document,
    HeadingPath,
    Marks,
    clean_title,
    normalize_text,
)
from micro_rag_mcp.ingest.readers.guards import Budget, check_text_length, short
from micro_rag_mcp.ingest.readers.ocr import (
    FILE_BUDGET_S,
    INSTALL_HINT,
    OCR_LOCATOR,
    PAGE_BUDGET_S,
    RENDER_DPI,
    ocr_installed,
    recognize,
)

logger = logging.getLogger(__name__)

# PDF work bounds.
PDF_TIME_BUDGET_S = 60.0
PDF_MAX_PAGES = 10_000
MAX_OUTLINE_DEPTH = 8
MAX_OUTLINE_ENTRIES = 10_000


def read_pdf(
    path: Path,
    *,
    time_budget: float = PDF_TIME_BUDGET_S,
    max_pages: int = PDF_MAX_PAGES,
    ocr: bool | None = None,
    ocr_budget: float = FILE_BUDGET_S,
    ocr_page_budget: float = PAGE_BUDGET_S,
) -> Document:
    """Extract text page by page; pages joined by a blank line, offsets in ``page_starts``.

    A page that fails is logged and left empty. Extraction stops (with a warning) after
    ``max_pages`` pages or once ``time_budget`` seconds have passed; the budget is checked
    between pages, so a single pathological page can still take long. The file is read
    through one open stream, never reopened by name (``path`` may be a descriptor's
    ``/proc/self/fd/N``).

    A page with no text layer but an image is recognized by OCR (``ocr``: None when the
    extra is installed) and has the locator ``OCR``; a page with a text layer never is.
    Pages are started while ``ocr_budget`` lasts; each stops after ``ocr_page_budget``.
    """
    use_ocr = ocr_installed() if ocr is None else ocr
    with open(path, "rb") as stream:
        pdf = _open_pdf(stream)
        try:
            texts = _extract_pages(pdf, path, time_budget, max_pages)
            recognized = (
                _recognize_scans(pdf, texts, path, ocr_budget, ocr_page_budget)
                if use_ocr
                else set()
            )
            title = _pdf_title(pdf, path)
            outline = _outline(pdf, path)
        finally:
            pdf.close()
    if not any(texts):
        if use_ocr:
            raise ReadError("no extractable text, and none recognized by OCR")
        raise ReadError(f"no extractable text (a scan? OCR reads scans: {INSTALL_HINT})")
    doc = _join_pages(texts, title)
    return replace(
        doc,
        sections=_page_sections(outline, doc.page_starts),
        locators=_ocr_marks(recognized, doc.page_starts),
    )


def _recognize_scans(
    pdf: Any, texts: list[str], path: Path, file_budget: float, page_budget: float
) -> set[int]:
    """OCR each page that has no text but an image, in place; the pages recognized."""
    budget = Budget(file_budget)
    recognized: set[int] = set()
    for index, text in enumerate(texts):
        if text or not _has_image(pdf, index, path):
            continue
        if budget.spent():
            logger.warning("%s: OCR stopped before page %d (time budget)", path, index + 1)
            break
        try:
            with closing(pdf[index]) as page:
                image = page.render(scale=RENDER_DPI / 72).to_pil()
            where = f"{path} page {index + 1}"
            texts[index] = normalize_text(recognize(image, where=where, budget_s=page_budget))
        except ReadError:
            raise  # the recognizer cannot start: no page can be read
        except Exception as e:  # one bad page must not lose the whole document
            logger.warning("%s: page %d could not be recognized: %s", path, index + 1, short(e))
            continue
        if texts[index]:
            recognized.add(index)
    return recognized


def _has_image(pdf: Any, index: int, path: Path) -> bool:
    import pypdfium2.raw as pdfium_c

    try:
        with closing(pdf[index]) as page:
            return any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE]))
    except Exception as e:
        logger.warning("%s: page %d could not be inspected: %s", path, index + 1, short(e))
        return False


def _ocr_marks(recognized: set[int], page_starts: tuple[int, ...]) -> Marks:
    """The locator ``OCR`` from each recognized page's start, cleared at the next other page."""
    marks: list[tuple[int, str]] = []
    for index, start in enumerate(page_starts):
        label = OCR_LOCATOR if index in recognized else ""
        if (marks[-1][1] if marks else "") != label:
            marks.append((start, label))
    return tuple(marks)


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
        raise ReadError(f"corrupt or unsupported PDF: {reasons.get(e.err_code, short(e))}") from e


def _extract_pages(pdf: Any, path: Path, time_budget: float, max_pages: int) -> list[str]:
    """Normalized, stripped text of each page, within the page and time bounds."""
    count = len(pdf)
    if count > max_pages:
        logger.warning("%s: %d pages, extracting only the first %d", path, count, max_pages)
        count = max_pages
    budget = Budget(time_budget)
    texts: list[str] = []
    length = 0
    for index in range(count):
        if index > 0 and budget.spent():
            logger.warning(
                "%s: stopped after %d of %d pages (time budget of %gs used up)",
                path,
                index,
                count,
                time_budget,
            )
            break
        texts.append(_page_text(pdf, index, path))
        length += len(texts[-1]) + 2
        check_text_length(length)  # pages drawing one shared content stream
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
        logger.warning("%s: page %d could not be extracted: %s", path, index + 1, short(e))
        return ""
    return normalize_text(raw.replace("\ufffe", "-")).strip()


def _pdf_title(pdf: Any, path: Path) -> str:
    """The ``Title`` of the document information dictionary, cleaned; "" if unreadable."""
    try:
        raw = pdf.get_metadata_value("Title")
    except Exception as e:  # the title is a nicety: never lose the text over it
        logger.warning("%s: title could not be read: %s", path, short(e))
        return ""
    return clean_title(raw)


def _outline(pdf: Any, path: Path) -> list[tuple[int, str, int]]:
    """The outline (bookmarks) as (level from 1, title, 0-based page), in order."""
    entries: list[tuple[int, str, int]] = []
    try:
        for item in pdf.get_toc(max_depth=MAX_OUTLINE_DEPTH):
            if len(entries) >= MAX_OUTLINE_ENTRIES:
                break
            dest = item.get_dest()
            page = dest.get_index() if dest is not None else None
            if page is not None:
                entries.append((item.level + 1, str(item.get_title()), int(page)))
    except Exception as e:  # the outline is a nicety: never lose the text over it
        logger.warning("%s: outline could not be read: %s", path, short(e))
    return entries


def _page_sections(outline: list[tuple[int, str, int]], page_starts: tuple[int, ...]) -> Marks:
    """Each page's section: the path of the last outline entry pointing at or before it.

    Passages are chunked page by page, so a page's start is where its section is marked.
    """
    by_page: dict[int, str] = {}
    headings = HeadingPath()
    for level, title, page in outline:
        if 0 <= page < len(page_starts):
            by_page[page] = headings.enter(level, title)
    return tuple((page_starts[page], by_page[page]) for page in sorted(by_page))


def _join_pages(texts: list[str], title: str) -> Document:
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 2
    return Document("\n\n".join(texts), tuple(starts), title)
