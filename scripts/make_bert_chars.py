"""Write ``model/minilm/chars.json``: what MiniLM's tokenizer does to each character.

MiniLM's tokenizer (``model/bert_tokenizer.py``) normalizes and splits text as the
``tokenizers`` library's ``BertNormalizer`` (clean the text, space out Chinese
characters, strip accents, lowercase) and ``BertPreTokenizer`` (split at whitespace, and
around each punctuation mark) do. Those steps act on one character at a time, by Unicode
tables of the Rust standard library, which are not Python's (another Unicode version,
another idea of whitespace). So the tables are taken from ``tokenizers`` itself: every
code point is run through its normalizer alone, then through its pre-tokenizer alone
between two letters, and what changes is written down, as ranges:

- ``deleted``: characters the normalizer removes (controls, unassigned code points);
- ``spaced``: characters it puts between two spaces (Chinese characters);
- ``mapped``: any other change, by code point (lowercase, accents stripped, whitespace
  to a space): the string it becomes; but for the 11,172 Hangul syllables, which become
  their jamo by Unicode's arithmetic (the tokenizer's ``hangul_jamo``, checked here);
- ``punctuation``: characters the pre-tokenizer makes a word of their own;
- ``whitespace``: characters it splits at (after the normalizer only the space is left).

Run it when ``tokenizers`` changes its tables, with the test extra installed; the test
(tests/test_bert_tokenizer.py) compares the two tokenizers on text of every block:

    python scripts/make_bert_chars.py
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

from tokenizers import normalizers, pre_tokenizers

from micro_rag_mcp.model.bert_tokenizer import HANGUL, hangul_jamo

OUT = Path(__file__).resolve().parent.parent / "src/micro_rag_mcp/model/minilm/chars.json"
_SURROGATES = range(0xD800, 0xE000)


def ranges(points: Iterable[int]) -> list[list[int]]:
    """Sorted code points as ``[first, last]`` runs."""
    out: list[list[int]] = []
    for point in sorted(points):
        if out and out[-1][1] == point - 1:
            out[-1][1] = point
        else:
            out.append([point, point])
    return out


def tables() -> dict[str, object]:
    normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    splitter = pre_tokenizers.BertPreTokenizer()
    deleted, spaced, punctuation, whitespace = [], [], [], []
    mapped: dict[str, str] = {}
    for point in range(sys.maxunicode + 1):
        if point in _SURROGATES:
            continue
        char = chr(point)
        out = normalizer.normalize_str(char)
        if out == "":
            deleted.append(point)
        elif out == f" {char} ":
            spaced.append(point)
        elif point in HANGUL:
            if out != hangul_jamo(point):
                raise SystemExit(f"U+{point:04X} becomes {out!r}, not its jamo")
        elif out != char:
            mapped[str(point)] = out
        words = [word for word, _ in splitter.pre_tokenize_str(f"a{char}a")]
        if words == ["a", char, "a"]:
            punctuation.append(point)
        elif words == ["a", "a"]:
            whitespace.append(point)
        elif words != [f"a{char}a"]:
            raise SystemExit(f"U+{point:04X} splits as {words}: not a case this table holds")
    return {
        "source": "tokenizers BertNormalizer(lowercase) and BertPreTokenizer",
        "deleted": ranges(deleted),
        "spaced": ranges(spaced),
        "hangul": [HANGUL.start, HANGUL.stop - 1],
        "mapped": mapped,
        "punctuation": ranges(punctuation),
        "whitespace": ranges(whitespace),
    }


def main() -> int:
    data = tables()
    OUT.write_text(json.dumps(data, ensure_ascii=True, separators=(",", ":")) + "\n")
    sizes = {key: len(value) for key, value in data.items() if not isinstance(value, str)}
    print(f"{OUT}: {OUT.stat().st_size} bytes, {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
