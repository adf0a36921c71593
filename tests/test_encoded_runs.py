"""Runs of encoded bytes (base64, hex dumps) are cut out of every format's text; what
only looks long (URLs, hashes, CJK text, identifiers) stays."""

from __future__ import annotations

import base64
import hashlib
import random
from pathlib import Path

import pytest

from micro_rag_mcp.ingest.readers import Document, read_document
from micro_rag_mcp.text.chunking import Locator
from tests.formatfactory import code_cell, make_ipynb, md_cell

BLOB = base64.encodebytes(random.Random(7).randbytes(3000)).decode()  # 76-character lines


def read(path: Path) -> Document:
    return read_document(path, max_bytes=10**8)


def test_a_base64_block_in_a_text_file_is_cut_and_the_prose_kept(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(f"Crane log for March.\n\n{BLOB}\nThe boom was inspected.\n")
    doc = read(path)
    assert doc.text == "Crane log for March.\n\n\n\nThe boom was inspected.\n"


def test_a_data_uri_and_a_pem_block_in_markdown_are_cut(tmp_path: Path) -> None:
    pem = "".join(BLOB.splitlines(keepends=True)[:8]).replace("\n", "\n> ")  # quoted lines
    path = tmp_path / "page.md"
    path.write_text(
        "# Logo\n\nThe logo: ![logo](data:image/png;base64,"
        + BLOB.replace("\n", "")
        + ") in blue.\n\n> -----BEGIN CERTIFICATE-----\n> "
        + pem
        + "-----END CERTIFICATE-----\n\nSigned by the harbour office.\n"
    )
    doc = read(path)
    assert "The logo: ![logo](data:image/png;base64,) in blue." in doc.text
    assert "-----BEGIN CERTIFICATE-----\n> \n> -----END CERTIFICATE-----" in doc.text
    assert "Signed by the harbour office." in doc.text
    assert max(len(word) for word in doc.text.split()) < 60


def test_an_image_output_pasted_into_a_notebook_cell_is_cut(tmp_path: Path) -> None:
    cell = code_cell(f'icon = """\n{BLOB}"""\nshow(icon)  # the harbour logo')
    doc = read(make_ipynb(tmp_path / "logo.ipynb", [md_cell("# Harbour logo"), cell]))
    assert "show(icon)  # the harbour logo" in doc.text
    assert BLOB.splitlines()[5] not in doc.text


def sri(n: int) -> str:
    """A subresource-integrity digest: 64 characters of base64."""
    return base64.b64encode(hashlib.sha384(bytes(n)).digest()).decode()


URL = (
    "https://www.google.com/url?sa=t&url=aHR0cHM6Ly9leGFtcGxlLm9yZy9yZXBvcnRzLzIwMjQvaGFyYm91ci1"
    "jcmFuZS1yZXBhaXItcXVvdGUtYW5kLXNjaGVkdWxlLnBkZj9kb3dubG9hZD10cnVlJnZlcnNpb249Mw&usg=AOvVaw0"
    "nQzR8X3uK9pLmN2bV7cX4&opi=89978449"
)
KEPT = {
    "a long URL": f"Quote at {URL} and again\n{URL}\n{URL}\n",
    "hashes in code": "".join(
        f'CHECKSUMS["{n}"] = "{hashlib.sha512(str(n).encode()).hexdigest()}"\n' for n in range(6)
    )
    + "\n".join(hashlib.sha1(str(n).encode()).hexdigest() for n in range(12))
    + "\n"
    + "\n".join(  # subresource integrity: base64 digests, one a line
        f'<script integrity="sha384-{sri(n)}">' for n in range(6)
    ),
    "CJK text": "港口起重机的维修报价和时间表已经附上请在周五之前确认" * 20
    + "\nクレーンの修理見積もりと日程表を添付しました金曜日までにご確認ください" * 10,
    "long identifiers": "\n".join(
        [
            "AbstractSingletonProxyFactoryBeanDefinitionRegistryPostProcessor",
            "XMLHttpRequestEventTarget2DContextV8Alpha3",
            "get_harbour_crane_repair_quote_and_schedule_v2_2024_final",
            "HarbourCraneRepairQuoteScheduleRevision4OfficeCopy",
            "com.example.harbour.crane.repair.QuoteScheduleServiceImpl",
            "ThisIsAVeryLongPascalCaseNameForATestOfTheIndexer",
        ]
        * 4
    ),
}


@pytest.mark.parametrize("name", KEPT)
def test_long_tokens_that_are_not_encoded_bytes_stay(tmp_path: Path, name: str) -> None:
    path = tmp_path / "kept.txt"
    path.write_text(f"Kept tokens.\n\n{KEPT[name]}\n")
    assert read(path).text == f"Kept tokens.\n\n{KEPT[name]}\n"


def test_a_long_hex_dump_is_cut_but_a_hash_is_not(tmp_path: Path) -> None:
    digest = hashlib.sha512(b"crane").hexdigest()
    dump = random.Random(3).randbytes(400).hex()
    path = tmp_path / "dump.txt"
    path.write_text(f"Digest {digest}.\nDump {dump}.\n")
    assert read(path).text == f"Digest {digest}.\nDump .\n"


def test_marks_move_with_the_text_they_mark() -> None:
    from micro_rag_mcp.ingest.readers.encoded import without_encoded_runs

    blob = BLOB[:800]
    text = f"Page one words.\n{blob}\nPage two words.\n{blob}\nPage three words."
    doc = Document(
        text,
        page_starts=(0, text.index("Page two"), text.index("Page three")),
        sections=((0, "One"), (text.index(blob) + 10, "Inside"), (text.index("Page two"), "Two")),
        locators=((text.index("Page three"), "slide 3"),),
        rows=((text.index("Page two"), 2),),
        breaks=(text.index("Page three"),),
    )
    cut = without_encoded_runs(doc)
    assert cut.text == "Page one words.\n\nPage two words.\n\nPage three words."
    two, three = cut.text.index("Page two"), cut.text.index("Page three")
    assert cut.page_starts == (0, two, three)
    assert cut.sections == ((0, "One"), (len("Page one words.\n"), "Inside"), (two, "Two"))
    assert cut.locators == ((three, "slide 3"),) and cut.rows == ((two, 2),)
    assert cut.breaks == (three,)
    locate = Locator(cut.text, cut.page_starts, sections=cut.sections, locators=cut.locators)
    assert locate.page(three) == 3 and locate.section(two) == "Two"
