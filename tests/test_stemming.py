"""Stemming on our side gives the words SQLite FTS5's porter tokenizer indexes."""

from __future__ import annotations

import sqlite3

from micro_rag_mcp.text.stemming import stemmed, words

TEXT = (
    "The Café's generalizations: running, runs and ran; caresses, ponies, flies, dying. "
    "Agreed relational conditional rationalization hopefulness (1998) at 3.5 km/h; "
    "naïve résumés, über-fast engines_and_pumps, a b cd. " + "x" * 70  # longer than FTS5 stems
)


def fts5_terms(text: str) -> list[str]:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.execute("INSERT INTO t VALUES (?)", (text,))
    return [row[0] for row in db.execute("SELECT term FROM v ORDER BY offset")]


def test_stemmed_text_has_the_terms_fts5_porter_indexes_in_order() -> None:
    assert stemmed(TEXT).split() == fts5_terms(TEXT)


def test_words_fold_case_and_diacritics_and_split_on_punctuation() -> None:
    assert words("Naïve RÉSUMÉ, engines_and-pumps 3.5") == [
        "naive",
        "resume",
        "engines",
        "and",
        "pumps",
        "3",
        "5",
    ]
    assert stemmed("running runs") == "run run"
    assert stemmed("") == ""
