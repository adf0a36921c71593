"""CJK pairs spelled as ASCII words for the Milvus store, whose analyzer cannot split a
CJK run: a chunk's pairs as ``gram_token`` words beside its stemmed words, and a whole
file's pairs as shorter ``pair_word`` words (a store caps a row's text). The pairs
themselves are ``text.cjk``'s, as the embedded store indexes them."""

from __future__ import annotations

import re

from micro_rag_mcp.text.cjk import bigrams


def gram_token(gram: str) -> str:
    """A bigram (or lone character) as one ASCII word, ``cjk`` and six hex digits a
    character: a store whose analyzer cannot split CJK runs keeps it whole."""
    return "cjk" + "".join(f"{ord(ch):06x}" for ch in gram)


_GRAM_TOKEN = re.compile(r"cjk(?:[0-9a-f]{6}){1,2}")


def is_gram_token(word: str) -> bool:
    """Whether ``word`` is a ``gram_token``."""
    return _GRAM_TOKEN.fullmatch(word) is not None


def gram_tokens(text: str) -> list[str]:
    """The text's bigrams (``bigrams``) as ``gram_token`` words."""
    return [gram_token(g) for g in bigrams(text).split()]


def pair_word(gram: str) -> str:
    """A bigram (or lone character) as a short ASCII word, ``q`` and its code points in
    base 36: a whole file's pairs as ``gram_token`` words (15 letters) would take twice
    the room, and a store caps a row's text."""
    value = 0
    for ch in gram:
        value = value * 0x110000 + ord(ch)
    value += 0x110000 if len(gram) == 1 else 0x110000 * 0x110000  # one char never as two
    digits = []
    while value:
        value, d = divmod(value, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[d])
    return "q" + "".join(reversed(digits))
