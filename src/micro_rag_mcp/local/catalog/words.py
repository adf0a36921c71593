"""A word with CJK characters as the word index (``chunks_fts``) stores it.

FTS5's ``unicode61`` takes an unspaced run of CJK characters for one word, and nearly
every run of a Chinese or Japanese text is a word of its own. A short run is a name, a
title or a term of a list, which a question may quote whole (「デスマスク」): the index
keeps a 56-bit hash of it (``hashed``; the same run gives the same hash in a text and in
a query), and ``search.plan`` searches a query's short runs as words. A longer run is a
clause, which no question repeats: the index keeps one and the same mark, ``RUN_MARK``,
in its place, and no search asks for it. BM25 reads a row's length in words, so the
lengths of rows and the statistics of every other word are those the text gave; the
dictionary no longer holds a word per clause (JaQuAD: the word index 0.41x the text
before, 0.17x; every keyword ranking unchanged, docs/benchmarks.md). The hash and the
mark are written in digits and lower-case letters and end in a digit, so the Porter
stemmer leaves them alone.

A catalog made before the mark (no ``MARK_KEY`` in its meta) keeps hashing every run: a
contentless row is deleted by giving FTS5 the words it was made of, so a catalog's rows
are always written one way.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from micro_rag_mcp.text.cjk import RUN_CHARS, has_cjk

# The meta key of a catalog whose long CJK runs are stored as ``RUN_MARK``.
MARK_KEY = "cjk_run_mark"
RUN_MARK = "cjkrun0"

_WORD = re.compile(r"[^\W_]+")  # letters and digits: unicode61's token characters
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def stored_words(marked: bool) -> Callable[[str], str]:
    """How a catalog's word index is given a text: short CJK runs as their hashes and
    long ones as the mark (``marked``, a catalog with ``MARK_KEY``), or every run as its
    hash (one made before)."""
    return marked_runs if marked else hashed


def marked_runs(text: str) -> str:
    """``text`` with each of its words that holds a CJK character replaced by its hash,
    or by the mark if it is longer than ``RUN_CHARS``."""
    if not has_cjk(text):
        return text
    return _WORD.sub(_marked, text)


def _marked(match: re.Match[str]) -> str:
    word = match.group(0)
    if has_cjk(word) and len(word) > RUN_CHARS:
        return RUN_MARK
    return _hashed(match)


def hashed(text: str) -> str:
    """``text`` with each of its words that holds a CJK character replaced by a hash of
    it, digits and lower-case letters ending in a digit: how a query's words are searched,
    and how a catalog made before the mark stores every run."""
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
