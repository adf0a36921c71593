"""The one list of formats: the groups, the README and docs/formats.md's table follow it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.core.formats import FORMATS
from micro_rag_mcp.core.settings import CODE_EXTS, DOC_EXTS, EXT_GROUPS
from micro_rag_mcp.ingest.readers import READERS, read_document

ROOT = Path(__file__).resolve().parent.parent


def table_suffixes(text: str) -> list[str]:
    """Suffixes named in the first column of docs/formats.md's table of formats, in order."""
    table = text.split("| format |", 1)[1].split("\n\n", 1)[0]
    suffixes: list[str] = []
    for line in table.splitlines()[2:]:
        first_cell = line.split(" | ", 1)[0]
        for span in re.findall(r"`([^`]*)`", first_cell):
            suffixes += re.findall(r"\.[a-z0-9]+", span)
    return suffixes


def test_the_formats_table_lists_every_suffix_of_every_format_once() -> None:
    listed = table_suffixes((ROOT / "docs" / "formats.md").read_text())
    assert sorted(listed) == sorted(s for fmt in FORMATS for s in fmt.suffixes)


def test_the_readme_names_every_suffix() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Formats\n", 1)[1].split("\n## ", 1)[0]
    for suffix in (s for fmt in FORMATS for s in fmt.suffixes):
        assert re.search(rf"(?<![\w.]){re.escape(suffix)}(?!\w)", section), suffix


def test_docs_formats_md_names_every_format() -> None:
    text = (ROOT / "docs" / "formats.md").read_text()
    table = text.split("| format |", 1)[1].split("\n\n", 1)[0]
    for fmt in FORMATS:
        assert any(suffix in table for suffix in fmt.suffixes), fmt.name


def test_groups_and_readers_are_the_formats_that_can_be_read() -> None:
    readable = [fmt for fmt in FORMATS if fmt.available]
    assert tuple(s for f in readable if f.group == "docs" for s in f.suffixes) == DOC_EXTS
    assert tuple(s for f in readable if f.group == "code" for s in f.suffixes) == CODE_EXTS
    assert (
        set(READERS)
        == set(DOC_EXTS) | set(CODE_EXTS)
        == {s for group in EXT_GROUPS.values() for s in group}
    )
    assert all(fmt.available for fmt in FORMATS if not fmt.extra)


def test_no_suffix_belongs_to_two_formats() -> None:
    suffixes = [s for fmt in FORMATS for s in fmt.suffixes]
    assert len(suffixes) == len(set(suffixes))
    assert all(s == s.lower() and s.startswith(".") for s in suffixes)


@pytest.mark.parametrize("suffix", sorted(READERS))
@pytest.mark.parametrize("content", [b"", b"\x00\xff garbage \x89PNG\r\n" * 50])
def test_every_reader_turns_empty_or_garbage_bytes_into_a_reason_or_text(
    tmp_path: Path, suffix: str, content: bytes
) -> None:
    path = tmp_path / f"odd{suffix}"
    path.write_bytes(content)
    try:
        doc = read_document(path, max_bytes=10**6)
    except ReadError as e:
        assert str(e) and "\n" not in str(e)
    else:
        assert isinstance(doc.text, str)


def test_a_suffix_of_a_missing_extra_is_refused_with_the_install_hint() -> None:
    from micro_rag_mcp.core.errors import ConfigError
    from micro_rag_mcp.core.formats import missing_extra
    from micro_rag_mcp.options import parse_exts

    for fmt in FORMATS:
        for suffix in fmt.suffixes:
            assert missing_extra(suffix) == ("" if fmt.available else fmt.extra)
            if fmt.available:
                assert parse_exts(suffix) == (suffix,)
            else:
                with pytest.raises(ConfigError, match=rf"\[{fmt.extra}\]'$"):
                    parse_exts(suffix)
