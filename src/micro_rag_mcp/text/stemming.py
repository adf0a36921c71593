"""Words as SQLite FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer indexes them.

The embedded store's keyword channel matches "running" to "runs" because FTS5 stems
both to "run". A store whose own analyzer cannot stem (milvus-lite's BM25 analyzer has
no stemmer filter) is given text stemmed here instead, and its queries are stemmed the
same way, so both stores' keyword channels see the same words.

Like unicode61, a word is a run of letters and digits, lower-cased, its diacritics
removed; like FTS5's porter, words of 3 to 64 bytes are stemmed by Porter's original
algorithm (the Snowball ``porter`` stemmer; ``snowballstemmer`` uses PyStemmer's C
code when that is installed).
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from typing import Any

# Recorded with a store that holds stemmed text: text stemmed another way is not mixed in.
STEMMING_ID = "porter-unicode61-1"

_WORD = re.compile(r"[^\W_]+")
_MIN_BYTES, _MAX_BYTES = 3, 64  # FTS5 passes shorter and longer words through as they are
# Stems remembered: a folder's words repeat (Zipf), and stemming each occurrence again was
# most of a store worker's time. 2**17 words of a few dozen bytes is some 20 MB at most.
_MEMO_WORDS = 1 << 17


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased and without diacritics, in order."""
    lowered = text.lower()
    if lowered.isascii():  # nothing to decompose: skip the per-character pass
        return _WORD.findall(lowered)
    decomposed = unicodedata.normalize("NFD", lowered)
    plain = "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
    return _WORD.findall(unicodedata.normalize("NFC", plain))


def stem_words(tokens: list[str]) -> list[str]:
    """Each word's Porter stem (a word FTS5 would not stem is kept)."""
    return [_stem(w) for w in tokens]


@functools.lru_cache(maxsize=_MEMO_WORDS)
def _stem(word: str) -> str:
    if _MIN_BYTES <= len(word.encode("utf-8")) <= _MAX_BYTES:
        return str(_stemmer().stemWord(word))
    return word


def stemmed(text: str) -> str:
    """``text`` as its stemmed words, one space between them."""
    return " ".join(stem_words(words(text)))


_local = threading.local()  # a stemmer keeps state between calls: one per thread


def _stemmer() -> Any:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        try:
            import snowballstemmer
        except ImportError as e:
            raise ImportError(
                "a Milvus store needs the snowballstemmer package: "
                "pip install 'micro-rag-mcp[milvus]'"
            ) from e
        stemmer = _local.stemmer = snowballstemmer.stemmer("porter")
    return stemmer
