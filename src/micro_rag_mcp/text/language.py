"""How much of a text is in a language other than English: what ``--model auto`` reads.

The English encoder (MiniLM) reads English only; the multilingual one reads about 100
languages at 3.3x the CPU time. ``foreign_share`` says which a folder needs, from a
sample of its text, cheaply and without a model:

- a letter of another script (Cyrillic, Greek, Arabic, …) is foreign, and a CJK
  character weighs 3 (one carries about as much as a short English word);
- a Latin letter with a diacritic (ä, é, ñ, ş, ơ) is foreign;
- the plain ASCII letters are split between English and other Latin-script languages
  (German, French, Spanish, …) by the function words the text holds: English ones
  (``the``, ``which``) against other languages' (``und``, ``der``, ``les``, ``que``).
  Words both share (``in``, ``die``, ``was``, ``et`` of "et al.") count for neither;
  a text with none counts as English.

Measured on the dev collections' samples (``bench/auto_model.py``): the English sets
0.000, CoSQA (Python code with English comments) 0.001, XQuAD-R de 0.990, JaQuAD 0.991,
LeCaRD 0.998.
"""

from __future__ import annotations

import re
import unicodedata

CJK_WEIGHT = 3  # a CJK character counts as this many letters

_WORD = re.compile(r"[^\W\d_]+")
_CJK = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0002fa1f]"
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Frequent English function words that no common Latin-script language writes alike.
ENGLISH_WORDS = _words(
    "the and of to is that for with as on are this by be from or which it not have has "
    "were been their they can at these but its we between than other into more such when "
    "there would should about what how who our your you he she his her them those "
    "only after before because while each through where"
)
# Frequent function words of German, French, Spanish, Italian, Portuguese, Dutch, the
# Scandinavian languages and Polish that English texts do not hold (not ``et`` of "et
# al.", ``al``, ``son``, ``plus``, ``os``, ``Na``, ``Au``, ``med``).
OTHER_WORDS = _words(
    # German
    "der das und ist nicht ein eine einen zu den sich auf für dem wird sind auch nach bei "
    "oder aus wie über werden dass kann durch einer eines zum zur wurde wurden haben "
    "noch nur ich wir sie ihr sein seine diese dieser sehr wenn aber "
    # French
    "le les des du une est dans qui que sur pas avec ce cette sont aux "
    "ou il elle nous vous leur mais être été "
    # Spanish, Portuguese, Italian
    "el los las por para una uno es lo se su sus pero como más muy también "
    "está fue ser entre sobre um uma não mais foi são é "
    "di che della delle dei gli è sono anche nel nella alla "
    # Dutch, Scandinavian, Polish
    "het een niet zijn ook wordt worden naar bij heeft deze och att som är för inte "
    "av og ikke på jeg det się nie jest że jak przez oraz"
)


def foreign_share(text: str) -> float:
    """The weighted share of the text's letters that are not English (0.0 to 1.0; 0.0 for
    a text without letters)."""
    ascii_letters = foreign = 0
    for ch in text:
        if not ch.isalpha():
            continue
        if ch.isascii():
            ascii_letters += 1
        elif _CJK.match(ch):
            foreign += CJK_WEIGHT
        else:
            foreign += 1  # another script, or a Latin letter with a diacritic
    total = ascii_letters + foreign
    if not total:
        return 0.0
    return (foreign + ascii_letters * _other_latin(text)) / total


def _other_latin(text: str) -> float:
    """The share of the text's function words that are not English (0 with none)."""
    english = other = 0
    for word in _WORD.findall(text.lower()):
        word = unicodedata.normalize("NFC", word)
        if word in ENGLISH_WORDS:
            english += 1
        elif word in OTHER_WORDS:
            other += 1
    return other / (english + other) if english + other else 0.0
