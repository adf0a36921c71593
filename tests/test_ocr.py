"""OCR (the ``ocr`` extra): scanned PDF pages and image files, read offline.

Skipped as a whole when the extra is not installed; what happens then is pinned by the
tests that pass ``ocr=False`` and by tests/test_registry.py.
"""

from __future__ import annotations

import io
import os
import re
import warnings
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.core.formats import install_hint
from micro_rag_mcp.ingest.isolation import IsolatedReader, reader_memory_bytes
from micro_rag_mcp.ingest.readers import READERS, Document, read_document
from micro_rag_mcp.ingest.readers.ocr import INSTALL_HINT, ocr_installed
from micro_rag_mcp.ingest.readers.pdf import read_pdf
from micro_rag_mcp.local.engine import Engine
from micro_rag_mcp.text.chunking import Locator
from tests.formatfactory import make_blank_scan, make_scanned_pdf, text_image

pytestmark = pytest.mark.slow

needs_ocr = pytest.mark.skipif(
    not ocr_installed(),
    reason="the ocr extra is not installed (pip install -e '.[ocr]', Python 3.11 or 3.12 only)",
)

INVOICE = ["Invoice 4471 for the harbour crane repair", "Total due within thirty days"]
GIB = 1024**3


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def read(path: Path) -> Document:
    return read_document(path, max_bytes=10**8)


def place(doc: Document, needle: str) -> tuple[int | None, str | None]:
    start = doc.text.index(needle)
    locate = Locator(doc.text, doc.page_starts, locators=doc.locators)
    return locate.page(start), locate.where(start, start + len(needle))


def test_without_ocr_a_scanned_pdf_fails_with_the_install_hint(tmp_path: Path) -> None:
    path = make_scanned_pdf(tmp_path / "scan.pdf", [("", INVOICE)])
    with pytest.raises(ReadError, match=re.escape(INSTALL_HINT)):
        read_pdf(path, ocr=False)


def test_the_ocr_extra_asks_for_its_recognizer_only_on_pythons_it_supports() -> None:
    import tomllib

    from packaging.requirements import Requirement

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    extra = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]["ocr"]
    for line in extra:  # rapidocr-onnxruntime 1.4 requires Python < 3.13
        marker = Requirement(line).marker
        assert marker is not None, line
        assert [marker.evaluate({"python_version": v}) for v in ("3.11", "3.12", "3.13")] == [
            True,
            True,
            False,
        ]


def test_the_install_hint_names_the_python_the_extra_needs() -> None:
    assert install_hint("ocr", (3, 12)) == "pip install 'micro-rag-mcp[ocr]'"
    hint = install_hint("ocr", (3, 13))
    assert "pip install" not in hint and "3.12 or older" in hint and "3.13" in hint
    assert install_hint("ocr") == INSTALL_HINT  # this Python's, in the readers' errors


def test_images_are_indexed_only_with_the_extra() -> None:
    assert (".png" in READERS) == ocr_installed()


@needs_ocr
def test_an_image_file_is_read_by_ocr_and_marked_so(tmp_path: Path) -> None:
    path = tmp_path / "receipt.png"
    text_image(INVOICE).save(path)
    doc = read(path)
    assert words(" ".join(INVOICE)) <= words(doc.text)
    assert doc.locators == ((0, "OCR"),) and doc.page_starts == ()


ALERT = [
    "THIS IS A TEST OF THE NATIONAL EMERGENCY ALERT SYSTEM",
    "NO ACTUAL EMERGENCY",
    "Invoice 4471 for the harbour crane repair",
]


@needs_ocr
def test_a_jpeg_keeps_its_lines_and_their_spaces_as_a_png_does(tmp_path: Path) -> None:
    image = text_image(ALERT)
    image.save(tmp_path / "alert.png")
    image.save(tmp_path / "alert.jpg", quality=75)  # the recognizer ran its words together
    for name in ("alert.png", "alert.jpg"):
        assert read(tmp_path / name).text.split("\n") == ALERT, name


@needs_ocr
def test_each_frame_of_a_tiff_is_a_page(tmp_path: Path) -> None:
    path = tmp_path / "fax.tif"
    first, second = text_image(["Fax cover sheet"]), text_image(["Second page of the fax"])
    first.save(path, save_all=True, append_images=[second])
    doc = read(path)
    assert place(doc, "Second page")[0] == 2 and place(doc, "cover sheet")[0] == 1


@needs_ocr
def test_only_pages_without_a_text_layer_are_recognized(tmp_path: Path) -> None:
    path = make_scanned_pdf(
        tmp_path / "mixed.pdf",
        [
            ("Typed cover letter", ["Printed words inside a picture"]),
            ("", INVOICE),
            ("Appendix", []),
        ],
    )
    doc = read(path)
    assert "picture" not in doc.text  # page 1 has a text layer: its image is not read
    assert place(doc, "Typed cover letter") == (1, None)
    start = doc.text.index("Invoice")
    assert words(" ".join(INVOICE)) <= words(doc.text[start:])
    assert place(doc, "Invoice") == (2, "OCR")
    assert place(doc, "Appendix") == (3, None)


@needs_ocr
def test_a_scanned_pdf_with_no_words_in_its_images_gets_a_reason(tmp_path: Path) -> None:
    with pytest.raises(ReadError, match="none recognized by OCR"):
        read(make_blank_scan(tmp_path / "blank.pdf"))


@needs_ocr
def test_a_file_that_is_not_an_image_gets_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "fake.jpg"
    path.write_text("not an image at all")
    with pytest.raises(ReadError, match="not a readable image"):
        read(path)


@needs_ocr
def test_a_page_stops_between_line_batches_once_its_budget_is_spent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from micro_rag_mcp.ingest.readers.ocr import recognize

    lines = [f"Line number {n} of the dense page" for n in range(1, 31)]
    with caplog.at_level("WARNING"):
        text = recognize(text_image(lines), where="dense.png", budget_s=0.0)
    assert "Line number 1 " in text and "Line number 30 " not in text
    assert "dense.png: OCR stopped after 12 of 30 lines" in caplog.text


def png_claiming(width: int, height: int) -> bytes:
    """A valid PNG header (with its checksum) claiming ``width`` × ``height`` pixels."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b""))
        + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(
    ("size", "reason"),
    [((12_000, 10_000), "refused: an image of 12000×10000 pixels"), ((40_000, 40_000), "exceeds")],
)
def test_an_image_claiming_a_huge_canvas_is_refused_undecoded(
    tmp_path: Path, size: tuple[int, int], reason: str
) -> None:
    from micro_rag_mcp.ingest.readers.images import read_image

    path = tmp_path / "huge.png"
    path.write_bytes(png_claiming(*size))
    with warnings.catch_warnings(), pytest.raises(ReadError, match=reason):
        warnings.simplefilter("ignore")  # Pillow's own warning about a large image
        read_image(path)


def test_with_ocr_the_reader_memory_floor_is_1_5_gib_within_half_the_machine() -> None:
    assert reader_memory_bytes(4 * GIB, ocr=False) == GIB
    assert reader_memory_bytes(4 * GIB, ocr=True) == 3 * GIB // 2
    assert reader_memory_bytes(3 * GIB, ocr=True) == 3 * GIB // 2
    assert reader_memory_bytes(2 * GIB, ocr=True) == GIB  # half the machine, the old floor
    assert reader_memory_bytes(7 * GIB, ocr=True) == 7 * GIB // 4  # a quarter, as without
    assert reader_memory_bytes(32 * GIB, ocr=True) == 2 * GIB


def read_isolated(path: Path, memory_bytes: int) -> Document:
    with IsolatedReader(path.parent, timeout_s=600, memory_bytes=memory_bytes) as reader:
        return reader.read(path, max_bytes=10**8)


@needs_ocr
def test_an_image_is_recognized_in_the_reader_of_a_4_gb_machine(tmp_path: Path) -> None:
    path = tmp_path / "receipt.png"
    text_image(INVOICE).save(path)
    doc = read_isolated(path, reader_memory_bytes(4 * GIB, ocr=True))
    assert words(" ".join(INVOICE)) <= words(doc.text)


@needs_ocr
def test_a_recognizer_out_of_memory_is_one_sentence_naming_the_ceiling(tmp_path: Path) -> None:
    path = tmp_path / "receipt.png"
    text_image(INVOICE).save(path)
    with pytest.raises(ReadError) as failure:
        read_isolated(path, GIB)  # the floor without OCR: too little for the recognizer
    assert str(failure.value) == "refused: OCR needs more than the reader's 1,024 MB of memory"
    assert not failure.value.transient


@needs_ocr
@pytest.mark.parametrize("name", ["cut.png", "cut.jpg"])
def test_a_truncated_image_is_a_permanent_failure_with_its_reason(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    text_image(INVOICE).save(path)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ReadError) as failure:
        read_isolated(path, reader_memory_bytes())
    assert re.fullmatch(
        r"could not parse (PNG|JPG) file: image file is truncated.*", str(failure.value)
    )
    assert not failure.value.transient  # the file's own fault: not retried while unchanged


@needs_ocr
def test_a_truncated_image_is_not_read_again_until_it_changes(engine: Engine, data: Path) -> None:
    buffer = io.BytesIO()
    text_image(INVOICE).save(buffer, format="PNG")
    whole = buffer.getvalue()
    path = data / "receipt.png"
    text_image([*INVOICE, "A third line makes a longer file"]).save(path)
    path.write_bytes(path.read_bytes()[: len(whole) + 100])  # cut short, longer than whole
    os.utime(path, (1e9, 1e9))  # an old stamp, trusted as it stands
    assert [p for p, _ in engine.reindex().files_failed] == ["receipt.png"]
    path.write_bytes(whole + bytes(100))  # repaired, same size (bytes after the end are ignored)
    os.utime(path, (1e9, 1e9))
    assert [p for p, _ in engine.reindex().files_failed] == ["receipt.png"]  # not read again
    os.utime(path, (2e9, 2e9))
    report = engine.reindex()
    assert report.files_failed == [] and report.files_updated == 1


def test_spaces_go_back_only_at_word_gaps_and_never_into_cjk() -> None:
    import numpy as np

    from micro_rag_mcp.ingest.readers.ocr_spacing import respaced

    crop = np.full((20, 100, 3), 255, dtype=np.uint8)
    for left in (2, 12, 22, 52, 62, 72):  # letters 4 columns wide, 6 apart; a 26-column gap
        crop[4:16, left : left + 4] = 0
    columns = [0, 1, 2, 5, 6, 7]  # decoding steps: 10 over the line's 100 columns
    assert respaced(crop, "ONETWO", columns, 10.0) == "ONE TWO"
    assert respaced(crop, "港口起重机械", columns, 10.0) == "港口起重机械"
    assert respaced(crop, "ABC123", columns, 10.0) == "ABC 123"
    assert respaced(crop, "447123", columns, 10.0) == "447123"  # a monospaced number
    assert respaced(crop, "ONE TW", [0, 1, 2, 3, 5, 6], 10.0) == "ONE TW"  # spaced: kept
