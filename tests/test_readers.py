"""Readers turn real PDF, DOCX and text files into normalized text, or a ReadError."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers import (
    Document,
    clean_title,
    normalize_text,
    read_document,
    read_docx,
    read_pdf,
)
from micro_rag_mcp.text.chunking import Locator
from tests.docfactory import (
    MIB,
    Heading,
    Paragraph,
    Table,
    make_bare_docx,
    make_docx,
    make_encrypted_pdf,
    make_garbage_file,
    make_image_only_pdf,
    make_pdf,
    make_pdf_without_info,
    make_text,
    make_truncated_pdf,
    make_zip,
    make_zip_bomb_docx,
)

LIMIT = 50 * MIB
PAGES = [
    "Alpha apple orchard.\nFirst page, second line.",
    "Bravo banana plantation.",
    "Charlie cherry grove.\nThird page text.",
]


def read(path: Path) -> Document:
    return read_document(path, max_bytes=LIMIT)


def refusal(path: Path) -> str:
    with pytest.raises(ReadError) as info:
        read(path)
    return str(info.value)


# --------------------------------------------------------------------------- dispatch


def test_suffix_dispatch_is_case_insensitive(tmp_path: Path) -> None:
    assert read(make_text(tmp_path / "NOTES.TXT", "upper case suffix")).text == (
        "upper case suffix"
    )


def test_unknown_suffix_is_refused(tmp_path: Path) -> None:
    assert "unsupported file type '.xls'" in refusal(make_text(tmp_path / "a.xls", "x"))


def test_missing_file_is_a_read_error_chained_to_the_os_error(tmp_path: Path) -> None:
    with pytest.raises(ReadError, match="cannot read file") as info:
        read(tmp_path / "gone.txt")
    assert isinstance(info.value.__cause__, FileNotFoundError)
    assert info.value.transient  # the file may be back at the next reindex


def test_directory_named_like_a_document_is_refused(tmp_path: Path) -> None:
    (tmp_path / "folder.md").mkdir()
    assert refusal(tmp_path / "folder.md") == "not a regular file"


def test_file_over_the_size_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    path = make_text(tmp_path / "big.txt", "x" * (2 * MIB))
    with pytest.raises(ReadError, match=r"larger than the 1 MB limit"):
        read_document(path, max_bytes=MIB)


def test_file_at_the_size_limit_is_read(tmp_path: Path) -> None:
    path = make_text(tmp_path / "exact.txt", "y" * 1000)
    assert len(read_document(path, max_bytes=1000).text) == 1000


def test_heavy_libraries_are_not_imported_with_the_module() -> None:
    code = (
        "import sys, micro_rag_mcp.ingest.readers\n"
        "heavy = ('pypdfium2', 'pypdf', 'docx', 'charset_normalizer', 'openpyxl', 'pptx',"
        " 'selectolax', 'lxml')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- normalizing


def test_normalize_unifies_newlines_and_drops_controls() -> None:
    assert normalize_text("a\r\nb\rc\vd") == "a\nb\nc\nd"
    assert normalize_text("tab\tkept\x00\x01\x1b\x7fgone") == "tab\tkeptgone"


def test_normalize_turns_form_feed_into_a_paragraph_break() -> None:
    assert normalize_text("page one\fpage two") == "page one\n\npage two"


def test_normalize_replaces_lone_surrogates() -> None:
    assert normalize_text("bad\ud800pair") == "bad\ufffdpair"


# --------------------------------------------------------------------------- text files


def test_utf8_text_is_read(tmp_path: Path) -> None:
    text = "Grüße aus München — 東京 ✓\nline two"
    assert read(make_text(tmp_path / "u.md", text)).text == text


def test_utf8_bom_is_removed(tmp_path: Path) -> None:
    assert read(make_text(tmp_path / "b.txt", "héllo", bom=True)).text == "héllo"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom_is_decoded(tmp_path: Path, encoding: str) -> None:
    text = "Unicode text: naïve café, 日本語.\nSecond line."
    assert read(make_text(tmp_path / "w.txt", text, encoding, bom=True)).text == text


def test_utf16_without_bom_is_recognized_not_called_binary(tmp_path: Path) -> None:
    text = "Exported from an old tool without a byte order mark.\n" * 5
    assert read(make_text(tmp_path / "w.txt", text, "utf-16-le")).text == text


def test_latin1_text_is_detected(tmp_path: Path) -> None:
    text = "Café crème brûlée, naïve façade. Ça va très bien, merci à vous.\n" * 3
    assert read(make_text(tmp_path / "l.txt", text, "latin-1")).text == text


def test_invalid_utf8_bytes_are_replaced(tmp_path: Path) -> None:
    data = "Grüße aus München, café.\n".encode() * 5 + b"broken \xff byte\n"
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    text = read(path).text
    assert "broken \ufffd byte" in text
    assert text.startswith("Grüße aus München")


def test_crlf_text_is_normalized(tmp_path: Path) -> None:
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    assert read(path).text == "one\ntwo\n"


def test_binary_file_with_nul_bytes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "image.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    assert refusal(path) == "binary file, not text"


def test_random_bytes_are_refused_as_binary(tmp_path: Path) -> None:
    assert refusal(make_garbage_file(tmp_path / "noise.md")) == "binary file, not text"


def test_control_heavy_file_without_nul_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ctl.txt"
    path.write_bytes(b"\x01\x02\x03\x04abc" * 100)
    assert refusal(path) == "binary file, not text"


def test_empty_text_file_gives_empty_document(tmp_path: Path) -> None:
    assert read(make_text(tmp_path / "empty.txt", "")) == Document(text="")


# --------------------------------------------------------------------------- PDF


def test_pdf_pages_are_joined_with_page_starts(tmp_path: Path) -> None:
    doc = read(make_pdf(tmp_path / "three.pdf", PAGES))
    assert len(doc.page_starts) == 3
    assert doc.page_starts[0] == 0
    for start, first_word in zip(doc.page_starts, ["Alpha", "Bravo", "Charlie"], strict=True):
        assert doc.text[start:].startswith(first_word)
    for start in doc.page_starts[1:]:
        assert doc.text[start - 2 : start] == "\n\n"
    for word in ["orchard", "second line", "banana", "cherry", "Third page"]:
        assert word in doc.text


def test_locator_maps_pdf_offsets_to_their_pages(tmp_path: Path) -> None:
    doc = read(make_pdf(tmp_path / "three.pdf", PAGES))
    locate = Locator(doc.text, doc.page_starts)
    assert locate.page(doc.text.index("orchard")) == 1
    assert locate.page(doc.text.index("banana")) == 2
    assert locate.page(doc.text.index("Third page")) == 3


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-128", "AES-256"])
def test_pdf_encrypted_with_empty_password_is_read(tmp_path: Path, algorithm: str) -> None:
    path = make_encrypted_pdf(
        tmp_path / "open.pdf", "", ["Restricted but readable."], algorithm=algorithm
    )
    assert read(path).text == "Restricted but readable."


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-128", "AES-256"])
def test_pdf_needing_a_password_is_refused(tmp_path: Path, algorithm: str) -> None:
    path = make_encrypted_pdf(tmp_path / "locked.pdf", "s3cret", algorithm=algorithm)
    assert refusal(path) == "encrypted PDF (needs a password)"


def test_aes_pdf_is_read_without_the_cryptography_package(tmp_path: Path) -> None:
    """pdfium decrypts AES itself; no optional Python package is needed to read it."""
    files = [
        make_encrypted_pdf(tmp_path / f"{alg}.pdf", "", algorithm=alg)
        for alg in ("AES-128", "AES-256")
    ]
    code = textwrap.dedent(
        """
        import sys
        sys.modules["cryptography"] = None  # makes `import cryptography` fail
        sys.modules["Crypto"] = None        # and pycryptodome
        from pathlib import Path
        from micro_rag_mcp.core.errors import ReadError
        from micro_rag_mcp.ingest.readers import read_document
        for name in sys.argv[1:]:
            try:
                print(read_document(Path(name), max_bytes=10**8).text)
            except ReadError as e:
                print(e)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert result.stdout.splitlines() == ["Confidential quarterly figures."] * 2


def test_image_only_pdf_without_ocr_says_how_to_read_it(tmp_path: Path) -> None:
    from micro_rag_mcp.ingest.readers.pdf import read_pdf

    with pytest.raises(ReadError) as info:
        read_pdf(make_image_only_pdf(tmp_path / "scan.pdf", pages=2), ocr=False)
    assert str(info.value) == (
        "no extractable text (a scan? OCR reads scans: pip install 'micro-rag-mcp[ocr]')"
    )


def test_garbage_pdf_is_refused(tmp_path: Path) -> None:
    assert "PDF" in refusal(make_garbage_file(tmp_path / "noise.pdf"))


def test_truncated_pdf_is_refused(tmp_path: Path) -> None:
    assert "PDF" in refusal(make_truncated_pdf(tmp_path / "half.pdf", PAGES))


def test_empty_pdf_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "zero.pdf"
    path.write_bytes(b"")
    assert "PDF" in refusal(path)


def test_failing_page_is_logged_and_left_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from pypdfium2 import PdfTextPage

    real = PdfTextPage.get_text_range
    calls: list[int] = []

    def flaky(self: PdfTextPage, *args: object, **kwargs: object) -> str:
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("bad content stream")
        return str(real(self, *args, **kwargs))

    monkeypatch.setattr(PdfTextPage, "get_text_range", flaky)
    path = make_pdf(tmp_path / "flaky.pdf", PAGES)
    with caplog.at_level(logging.WARNING, logger="micro_rag_mcp.ingest.readers"):
        doc = read(path)
    assert len(doc.page_starts) == 3
    assert "banana" not in doc.text
    assert "orchard" in doc.text and "cherry" in doc.text
    assert Locator(doc.text, doc.page_starts).page(doc.text.index("cherry")) == 3
    assert any(str(path) in r.getMessage() and "page 2" in r.getMessage() for r in caplog.records)


def test_pdf_extraction_stops_at_the_page_cap(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = make_pdf(tmp_path / "three.pdf", PAGES)
    with caplog.at_level(logging.WARNING, logger="micro_rag_mcp.ingest.readers"):
        doc = read_pdf(path, max_pages=2)
    assert len(doc.page_starts) == 2
    assert "banana" in doc.text and "cherry" not in doc.text
    assert any("first 2" in r.getMessage() for r in caplog.records)


def test_pdf_extraction_stops_when_the_time_budget_is_spent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = make_pdf(tmp_path / "three.pdf", PAGES)
    with caplog.at_level(logging.WARNING, logger="micro_rag_mcp.ingest.readers"):
        doc = read_pdf(path, time_budget=0.0)
    assert doc.page_starts == (0,)
    assert "orchard" in doc.text and "banana" not in doc.text
    assert any("time budget" in r.getMessage() for r in caplog.records)


def test_pdf_line_end_hyphen_stays_a_hyphen(tmp_path: Path) -> None:
    """pdfium reports a hyphen it takes for a word break as U+FFFE; the text shows "-"."""
    path = make_pdf(tmp_path / "hyphen.pdf", ["Figures that give infor-\nmation on pre-tax gains."])
    text = read(path).text
    assert "\ufffe" not in text
    assert "infor-" in text and "pre-tax" in text


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
def test_pdf_is_read_through_its_descriptor_even_after_its_name_is_gone(tmp_path: Path) -> None:
    """The isolated reader reads what it opened, as /proc/self/fd/N: never by name again."""
    path = make_pdf(tmp_path / "opened.pdf", PAGES)
    fd = os.open(path, os.O_RDONLY)
    try:
        path.unlink()
        doc = read_document(Path(f"/proc/self/fd/{fd}"), max_bytes=LIMIT, suffix=".pdf")
    finally:
        os.close(fd)
    assert "orchard" in doc.text and len(doc.page_starts) == 3


# --------------------------------------------------------------------------- DOCX


def test_docx_keeps_headings_paragraphs_and_tables_in_order(tmp_path: Path) -> None:
    path = make_docx(
        tmp_path / "report.docx",
        [
            Heading("Quarterly Report", level=0),
            "First paragraph.",
            "",
            Table([["a", "b"], ["c", "d"]]),
            Heading("Outlook", level=2),
            "Closing words.",
        ],
    )
    assert read(path).text == (
        "Quarterly Report\n\nFirst paragraph.\n\na | b\nc | d\n\nOutlook\n\nClosing words."
    )


def test_docx_tabs_in_text_are_kept_but_tab_stop_definitions_are_not(tmp_path: Path) -> None:
    path = make_docx(
        tmp_path / "tabs.docx", [Paragraph("Name:\tValue", style="List Bullet", tab_stops=[1, 2])]
    )
    assert read(path).text == "Name:\tValue"


def test_docx_nested_table_is_flattened_into_its_cell(tmp_path: Path) -> None:
    path = make_docx(tmp_path / "nested.docx", [Table([["outer", Table([["in1", "in2"]])]])])
    assert read(path).text == "outer | in1 | in2"


def test_docx_that_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    path = make_text(tmp_path / "fake.docx", "just some text pretending to be a DOCX")
    assert refusal(path) == "not a valid DOCX (not a zip archive)"


def test_zip_without_word_document_is_refused(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "other.docx", {"content.xml": "<office/>"})
    assert refusal(path) == "not a valid DOCX (no word/document.xml)"


def test_docx_with_malformed_package_is_refused(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "broken.docx", {"word/document.xml": "<w:document"})
    assert refusal(path).startswith("not a valid DOCX")


def _forbid_expanding(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the archive was expanded")

    monkeypatch.setattr(zipfile.ZipFile, "open", refuse)
    monkeypatch.setattr(zipfile.ZipFile, "read", refuse)


def test_zip_bomb_docx_is_refused_without_expanding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_zip_bomb_docx(tmp_path / "bomb.docx", expanded_bytes=300 * MIB)
    assert path.stat().st_size < 5 * MIB
    _forbid_expanding(monkeypatch)
    reason = refusal(path)
    assert reason.startswith("refused: archive expands to 300 MB") and "zip bomb" in reason


def test_highly_compressed_member_is_refused_under_the_total_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_zip_bomb_docx(tmp_path / "small-bomb.docx", expanded_bytes=20 * MIB)
    _forbid_expanding(monkeypatch)
    reason = refusal(path)
    assert "from" in reason and "word/document.xml" in reason and "zip bomb" in reason


def test_expanded_size_limit_applies_to_ordinary_docx(tmp_path: Path) -> None:
    path = make_docx(tmp_path / "plain.docx", ["hello"])
    assert read(path).text == "hello"
    with pytest.raises(ReadError, match="over the 1000 bytes limit"):
        read_docx(path, max_expanded_bytes=1000)


# --------------------------------------------------------------------------- titles


def test_pdf_title_comes_from_its_information_dictionary(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "titled.pdf", PAGES, title="  Quarterly\n  Report\t2024 ")
    doc = read(path)
    assert doc.title == "Quarterly Report 2024"
    assert doc.text.startswith("Alpha apple orchard.")


def test_pdf_title_in_any_script_is_decoded(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "unicode.pdf", PAGES, title="Überblick — 東京 ✓")
    assert read(path).title == "Überblick — 東京 ✓"


def test_pdf_with_the_placeholder_title_has_none(tmp_path: Path) -> None:
    """reportlab, like many tools, writes "untitled" when the author gave no title."""
    assert read(make_pdf(tmp_path / "plain.pdf", PAGES)).title == ""


def test_pdf_without_an_information_dictionary_has_no_title(tmp_path: Path) -> None:
    doc = read(make_pdf_without_info(tmp_path / "bare.pdf", PAGES))
    assert doc.title == ""
    assert "orchard" in doc.text and len(doc.page_starts) == 3


def test_long_title_is_cut_to_200_characters(tmp_path: Path) -> None:
    title = " ".join(f"word{i}" for i in range(100))
    got = read(make_pdf(tmp_path / "long.pdf", PAGES, title=title)).title
    assert 190 <= len(got) <= 200
    assert title.startswith(got) and not got.endswith(" ")


def test_docx_title_comes_from_its_core_properties(tmp_path: Path) -> None:
    path = make_docx(tmp_path / "minutes.docx", ["Body text."], title=" Board\nMinutes  ")
    doc = read(path)
    assert (doc.text, doc.title) == ("Body text.", "Board Minutes")


def test_docx_without_a_title_has_none(tmp_path: Path) -> None:
    assert read(make_docx(tmp_path / "plain.docx", ["Body text."])).title == ""


def test_docx_without_core_properties_has_no_title(tmp_path: Path) -> None:
    """python-docx would invent the title "Word Document" for such a package."""
    path = make_bare_docx(tmp_path / "bare.docx", "<w:p><w:r><w:t>Bare body.</w:t></w:r></w:p>")
    doc = read(path)
    assert (doc.text, doc.title) == ("Bare body.", "")


def test_text_files_have_no_title(tmp_path: Path) -> None:
    assert read(make_text(tmp_path / "notes.md", "# A heading is not a title\n")).title == ""


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Annual\r\n Report\t2024  ", "Annual Report 2024"),
        ("Tab\x00le of\x07 Contents", "Table of Contents"),
        ("Untitled", ""),
        ("untitled document", ""),
        ("No Title", ""),
        ("   ", ""),
        ("- - -", ""),
        (None, ""),
        (42, ""),
        ("x" * 300, "x" * 200),
    ],
)
def test_clean_title(raw: object, expected: str) -> None:
    assert clean_title(raw) == expected
