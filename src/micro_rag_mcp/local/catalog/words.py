"""A word with CJK characters as the word index (``chunks_fts``) stores it: a short hash.

FTS5's ``unicode61`` takes an unspaced run of CJK characters for one word, and nearly
every run of a Chinese or Japanese text is a word of its own: the index's dictionary of
them was about as large as the text (JaQuAD's paragraphs 1.0x, LeCaRD's cases 0.85x).
Such a word is searched only whole (its pairs, ``grams``, find its parts), so the index
keeps a 56-bit hash of it in its place: the same word gives the same hash in a text and
in a query, and the rows, counts and lengths BM25 reads are those the word gave (two
words share a hash about once in 10^17 pairs). A word without CJK characters is kept as
it is. The hash is written in digits and lower-case letters and ends in a digit, so the
Porter stemmer leaves it alone.
"""

from __future__ import annotations

import hashlib
import re

from micro_rag_mcp.text.cjk import has_cjk

_WORD = re.compile(r"[^\W_]+")  # letters and digits: unicode61's token characters
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def indexed(text: str) -> str:
    """``text`` with each of its words that holds a CJK character replaced by its hash
    (text without CJK characters comes back as it is)."""
    if not has_cjk(text):
        return text
    return _WORD.sub(_hashed, text)


def _hashed(match: re.Match[str]) -> str:
    word = match.group(0)
    if not has_cjk(word):
        return word
    value = int.from_bytes(
        hashlib.blake2b(word.lower().encode("utf-8", "surrogatepass"), digest_size=7).digest()
    )
    out = []
    while value:
        value, digit = divmod(value, 36)
        out.append(_DIGITS[digit])
    return "h" + "".join(out) + "0"
