"""Web pages and e-books: HTML (selectolax) and EPUB (zipfile + the HTML reader).

Visible text in reading order: headings give the sections, table rows become lines of
cells joined by `` | ``; scripts, styles, navigation, page headers and footers and
hidden elements are left out. The DOM is walked without recursion, so nesting depth
costs no stack, and within a time budget.
"""

from __future__ import annotations

import codecs
import logging
import posixpath
import re
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers.document import (
    Document,
    DocumentBuilder,
    HeadingPath,
    clean_heading,
    clean_title,
)
from micro_rag_mcp.ingest.readers.guards import Budget, vet_zip
from micro_rag_mcp.ingest.readers.text import decode_text_bytes

logger = logging.getLogger(__name__)

HTML_TIME_BUDGET_S = 60.0
# The parser's cost grows with the square of nesting depth (a million nested tags would
# take hours); real pages nest a few hundred deep at most.
MAX_HTML_DEPTH = 10_000
EPUB_MAX_CHAPTER_BYTES = 50 * 1024 * 1024


def _tags(names: str) -> frozenset[str]:
    return frozenset(names.split())


# Never visible, or page furniture rather than content.
_SKIP = _tags(
    "head script style noscript template svg math canvas iframe object embed nav select "
    "button input textarea"
)
_PAGE_FURNITURE = frozenset({"header", "footer", "aside"})
_CONTENT = frozenset({"article", "main"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = _tags(
    "address article aside blockquote body center dd details dialog div dl dt fieldset "
    "figcaption figure footer header hgroup hr html li main menu ol p pre section summary "
    "table tbody thead tfoot ul caption"
)
_CELLS = frozenset({"td", "th"})
_SPACES = re.compile(r"\s+")  # in text, any run of white space is one space
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def read_html(path: Path, *, time_budget: float = HTML_TIME_BUDGET_S) -> Document:
    """The visible text of a web page, its headings as sections and its ``<title>``."""
    builder = DocumentBuilder()
    title = add_html(builder, path.read_bytes(), HeadingPath(), Budget(time_budget), path)
    return builder.build(clean_title(title))


def decode_html(data: bytes) -> str:
    """Bytes of a page as text: the ``<meta charset>`` it declares, else by detection."""
    declared = _META_CHARSET.search(data[:4096])
    if declared is not None:
        try:
            codec = codecs.lookup(declared.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError):
            pass
        else:
            if not codec.name.startswith("utf-16"):  # declared in ASCII: it is not UTF-16
                return data.decode(codec.name, errors="replace")
    return decode_text_bytes(data)


def add_html(
    builder: DocumentBuilder, data: bytes, headings: HeadingPath, budget: Budget, path: Path
) -> str:
    """Add a page's blocks to ``builder``; return its ``<title>`` text."""
    from selectolax.lexbor import LexborHTMLParser

    html = _without_dtd_subset(decode_html(data))
    if nesting_depth(html, MAX_HTML_DEPTH) > MAX_HTML_DEPTH:
        raise ReadError(f"refused: tags nested more than {MAX_HTML_DEPTH:,} deep")
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = title_node.text(deep=True) if title_node is not None else ""
    if tree.root is not None:
        _Walker(builder, headings, budget, path).walk(tree.root)
    return title


# A DOCTYPE with an internal subset (``<!DOCTYPE html [<!ENTITY x "y">]>``): an HTML
# parser ends it at the first ``>`` and keeps the rest (``]>``) as text. Only at the
# start of the page, so one match attempt.
_DTD_SUBSET = re.compile(
    r"(\ufeff?\s*(?:<\?xml[^>]*>\s*)?)<!DOCTYPE[^\[>]*\[.*?\]\s*>", re.I | re.S
)


def _without_dtd_subset(html: str) -> str:
    """The page with its DOCTYPE's internal subset left out (never resolved anyway)."""
    match = _DTD_SUBSET.match(html)
    return html if match is None else match.group(1) + html[match.end() :]


_TAG = re.compile(r"<(/?)([A-Za-z][^\s/>]*)[^>]*?(/?)>")
# Elements that never contain others, or that the parser closes when a sibling starts.
_FLAT = _tags(
    "area base br col embed hr img input link meta param source track wbr p li dt dd tr td "
    "th option optgroup thead tbody tfoot colgroup rb rt rp"
)


_FOREIGN = frozenset({"svg", "math"})


def nesting_depth(html: str, limit: int) -> int:
    """How deep the page's tags nest, counted from its tags alone; stops past ``limit``.

    Counted as the parser nests them: in HTML a slash does not close a non-void
    element (``<div/>`` opens a ``div`` that the next one nests in); only inside
    ``<svg>`` or ``<math>`` does ``<path/>`` close itself. One pass over the tags.
    """
    depth = deepest = foreign = 0
    for match in _TAG.finditer(html):
        closing, name, self_closing = match.groups()
        name = name.lower()
        if name in _FLAT or (self_closing and foreign):
            continue
        if closing:
            depth = max(0, depth - 1)
            if name in _FOREIGN:
                foreign = max(0, foreign - 1)
            continue
        if name in _FOREIGN and not self_closing:
            foreign += 1
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
    return deepest


class _Walker:
    """Turns a DOM into blocks: inline text gathers until a block element ends it."""

    def __init__(
        self, builder: DocumentBuilder, headings: HeadingPath, budget: Budget, path: Path
    ) -> None:
        self.builder = builder
        self.headings = headings
        self.budget = budget
        self.path = path
        self.inline: list[str] = []
        self.last_was_row = False
        self.content_depth = 0  # inside <article> or <main>

    def walk(self, root: Any) -> None:
        stack: list[tuple[Any, bool]] = [(root, False)]
        seen = 0
        while stack:
            node, leaving = stack.pop()
            if leaving:
                self._leave(node)
                continue
            seen += 1
            if seen % 1000 == 0 and self.budget.spent():
                logger.warning(
                    "%s: stopped after %d elements (time budget of %gs used up)",
                    self.path,
                    seen,
                    self.budget.seconds,
                )
                break
            if self._enter(node):
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(list(_children(node))))
        self._flush()

    def _enter(self, node: Any) -> bool:
        """Handle the start of ``node``; whether its children are to be walked."""
        tag = node.tag
        if tag == "-text":
            self.inline.append(_SPACES.sub(" ", node.text_content or ""))
            return False
        if not isinstance(tag, str) or tag.startswith("-") or self._hidden(node, tag):
            return False
        if tag in _HEADINGS:
            self._flush()
            text = clean_heading(node.text(deep=True, separator=" "))
            if text:
                self.builder.section(self.headings.enter(_HEADINGS[tag], text))
                self._add(text)
            return False
        if tag == "pre":
            self._flush()
            self._add(node.text(deep=True), keep_spaces=True)
            return False
        if tag == "br":
            self.inline.append("\n")
        elif tag in _CELLS:
            if "".join(self.inline).strip():
                self.inline.append(" | ")
        elif tag == "tr" or tag in _BLOCKS:
            self._flush()
        if tag in _CONTENT:
            self.content_depth += 1
        return True

    def _leave(self, node: Any) -> None:
        tag = node.tag
        if tag in _CONTENT:
            self.content_depth -= 1
        if tag == "tr":
            self._flush(row=True)
        elif tag in _BLOCKS:
            self._flush()

    def _hidden(self, node: Any, tag: str) -> bool:
        if tag in _SKIP:
            return True
        if tag in _PAGE_FURNITURE and self.content_depth == 0:
            return True
        attrs = node.attributes
        return (
            "hidden" in attrs
            or attrs.get("aria-hidden") == "true"
            or attrs.get("role") in ("navigation", "banner", "contentinfo")
        )

    def _flush(self, *, row: bool = False) -> None:
        text = "".join(self.inline)
        self.inline.clear()
        lines = (" ".join(line.split()) for line in text.split("\n"))
        self._add("\n".join(line for line in lines if line), row=row)

    def _add(self, text: str, *, row: bool = False, keep_spaces: bool = False) -> None:
        if not keep_spaces:
            text = text.strip()
        if not text.strip():
            return
        sep = "\n" if row and self.last_was_row else "\n\n"
        self.builder.add(text, sep=sep)
        self.last_was_row = row


def _children(node: Any) -> Any:
    child = node.child
    while child is not None:
        yield child
        child = child.next


# --------------------------------------------------------------------------- EPUB

_CONTAINER = "META-INF/container.xml"
_OPF_NS = "{http://www.idpf.org/2007/opf}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_XHTML = frozenset({"application/xhtml+xml", "text/html"})


def read_epub(path: Path, *, time_budget: float = HTML_TIME_BUDGET_S) -> Document:
    """The chapters of an e-book in spine order; each starts a section of its own title.

    The archive is vetted (``guards.vet_zip``) before anything in it is expanded.
    """
    vet_zip(path, "EPUB", _CONTAINER)
    budget = Budget(time_budget)
    builder = DocumentBuilder()
    with zipfile.ZipFile(path) as archive:
        opf_path = _rootfile(archive)
        opf = _xml(archive.read(opf_path), "package document")
        chapters = _spine(opf, posixpath.dirname(opf_path))
        names = set(archive.namelist())
        title_el = opf.find(f".//{_DC_TITLE}")
        book_title = clean_title(title_el.text if title_el is not None else "")
        for index, href in enumerate(chapters, 1):
            if budget.spent():
                logger.warning("%s: stopped after %d chapters (time budget)", path, index - 1)
                break
            if href not in names:
                logger.warning("%s: chapter %s is missing from the archive", path, href)
                continue
            _add_chapter(builder, archive, href, budget, path, book_title)
    return builder.build(book_title)


def _add_chapter(
    builder: DocumentBuilder,
    archive: zipfile.ZipFile,
    href: str,
    budget: Budget,
    path: Path,
    book_title: str,
) -> None:
    """One chapter under its headings; no passage spans two chapters.

    Text before the chapter's first heading lies under that heading too (a chapter
    opens with an epigraph or a drop cap), else under the page's ``<title>`` unless that
    is only the book's title.
    """
    if archive.getinfo(href).file_size > EPUB_MAX_CHAPTER_BYTES:
        logger.warning("%s: chapter %s is too large; skipped", path, href)
        return
    chapter = DocumentBuilder()
    page_title = clean_heading(add_html(chapter, archive.read(href), HeadingPath(), budget, path))
    doc = chapter.build()
    if doc.sections:
        opening = doc.sections[0][1]
    else:
        opening = "" if page_title.casefold() == book_title.casefold() else page_title
    builder.hard_break()
    builder.section(opening)
    builder.add(doc.text, sections=doc.sections)


def _rootfile(archive: zipfile.ZipFile) -> str:
    container = _xml(archive.read(_CONTAINER), "container")
    for el in container.iter():
        if isinstance(el.tag, str) and el.tag.endswith("rootfile") and el.get("full-path"):
            return str(el.get("full-path"))
    raise ReadError("not a valid EPUB (no package document named in its container)")


def _spine(opf: Any, base: str) -> list[str]:
    """Archive names of the spine's (X)HTML documents, in reading order."""
    manifest = {
        item.get("id"): item
        for item in opf.iter(f"{_OPF_NS}item")
        if item.get("id") and item.get("href")
    }
    chapters: list[str] = []
    for ref in opf.iter(f"{_OPF_NS}itemref"):
        item = manifest.get(ref.get("idref"))
        if item is None or item.get("media-type") not in _XHTML:
            continue
        href = unquote(str(item.get("href")).split("#", 1)[0])
        chapters.append(posixpath.normpath(posixpath.join(base, href)))
    return chapters


def _xml(data: bytes, what: str) -> Any:
    """Parse XML of an archive without resolving entities or reaching the network."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        raise ReadError(f"not a valid EPUB (damaged {what}: {e})") from e
