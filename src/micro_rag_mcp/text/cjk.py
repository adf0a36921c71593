"""Chinese, Japanese and Korean text for the keyword channel, as overlapping bigrams.

FTS5's ``unicode61`` tokenizer takes an unspaced run of CJK characters for one word, so
a query finds a passage only by repeating the whole run. Each run is therefore also
indexed as its overlapping character pairs (``東京都庁`` → ``東京 京都 都庁``), and a
query is searched for every pair of its runs, each a term of its own scored by BM25: a
passage that holds the whole run holds every pair and ranks first, and a query of a
paragraph (a whole case description) is matched by every passage that shares its rare
pairs, not only by one that repeats a run of it verbatim. (A run as one phrase of its
pairs found almost nothing for such queries: nDCG@10 0.15 on LeCaRD, where a plain
bigram BM25 scores 0.60; see docs/benchmarks.md.) Text without CJK characters gets
nothing, so English is unaffected.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from micro_rag_mcp.text.vector_text import opens_with

# A CJK run of at most this many characters is a name, a title or a term,
# searched as a word beside its pairs (``search.plan``, ``local/catalog/words.py``).
# JaQuAD's 3,939 questions, keyword channel: every run kept 0.8732 nDCG@10, none 0.8716;
# up to 4 characters 0.8729, 8 0.8733, 12 0.8732.
RUN_CHARS = 8

MAX_QUERY_GRAMS = 1024  # distinct pairs a query is read for: a bound against hostile input
MAX_GRAM_REPEATS = 4  # times one pair of a query counts, at most

# Han (with extensions and compatibility), kana, Hangul syllables and jamo, bopomofo.
_CJK = (
    "\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0002fa1f"
)
_RUN = re.compile(f"[{_CJK}]+")


def has_cjk(text: str) -> bool:
    return _RUN.search(text) is not None


def read_share(text: str) -> float:
    """The share of the text's letters that are not CJK characters: what of a query the
    English-only encoder reads (1 for text without CJK, 0 for a query all in CJK; digits
    count for neither: dates and sums in a Chinese case description leave it at 0)."""
    cjk = sum(len(run) for run in _RUN.findall(text))
    other = sum(ch.isalpha() and not _RUN.match(ch) for ch in text)
    return 1.0 if cjk == 0 else other / (other + cjk)


def bigrams(text: str) -> str:
    """The text's CJK runs as space-separated bigrams (a lone character stays one)."""
    grams: list[str] = []
    for run in _RUN.findall(text):
        if len(run) == 1:
            grams.append(run)
        else:
            grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return " ".join(grams)


def query_grams(text: str) -> list[str]:
    """The distinct bigrams of a query's CJK runs of two or more characters, in order."""
    return list(query_gram_counts(text))


def query_gram_counts(text: str) -> dict[str, int]:
    """``query_grams``, each with how many times the query holds it (at most
    ``MAX_GRAM_REPEATS``: a repeated pair weighs more, a pasted run of one pair does not
    make a query of thousands of terms)."""
    grams: dict[str, int] = {}
    for run in _RUN.findall(text):
        for i in range(len(run) - 1):
            gram = run[i : i + 2]
            if gram in grams:
                grams[gram] = min(grams[gram] + 1, MAX_GRAM_REPEATS)
            elif len(grams) < MAX_QUERY_GRAMS:
                grams[gram] = 1
    return grams


def whole_text(rows: Sequence[tuple[Any, ...]]) -> str:
    """A file's text from its chunks in order (id, title, text, char_start, char_end):
    the title once (none above a text whose first line it is), and of each chunk only what
    the one before did not already hold."""
    parts: list[str] = []
    covered = 0
    for _, _, text, start, end in rows:
        if start > covered and parts:  # what lay between two chunks (a line break, a space)
            parts.append("\n")
        skip = max(0, covered - start)
        parts.append(text[skip:])
        covered = max(covered, end)
    opens = bool(rows) and bool(rows[0][1]) and opens_with(rows[0][1], rows[0][2])
    return (rows[0][1] + "\n" if rows and not opens else "") + "".join(parts)
