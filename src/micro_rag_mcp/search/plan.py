"""A query analysed once: what each channel of either store searches for it.

Both stores read the same ``QueryPlan`` (``plan_query``): the words the keyword channel
searches (stop words dropped, each once), the CJK pairs and whether
the query is long enough to be matched against whole files, whether it names an
identifier of code, and how much of it the English-only encoder reads. A store only
turns the plan into its own requests; nothing about the query is decided twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from micro_rag_mcp.search.documents import is_long
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.terms import code_share, names_identifier, query_terms
from micro_rag_mcp.text.cjk import RUN_CHARS, has_cjk, query_gram_counts, read_share


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """What a search looks for (see the module docstring).

    ``words`` are the keyword channel's words, each once (CJK runs only if short);
    ``grams`` each CJK pair with how often the query holds it; ``whole_files``: the pairs
    are also matched against whole files.
    ``read_share``: how much of the query the encoder makes sense of, the vector
    channel's weight (``fusion.vector_weight``): not its CJK text (``cjk.read_share``)
    unless the encoder reads every language and the query is short (a long one, matched
    against whole files, is left to its pairs: LeCaRD with e5-small 0.5901 against 0.6229),
    nor a code (``terms.code_share``; the rest, squared): ``ERR-4471`` is searched by its
    words alone, and ``how to fix ERR-4471`` mostly. Around a code, the query's words
    tell the sections of a runbook apart no better than the code does: with the rest
    taken once (a vector share of 0.35), ERR-4470's section tied the one ERR-4471 heads
    for ``What is the fix for ERR-4471?``; squared (0.17), that section led by 0.04
    (tests/test_headings.py, docs/benchmarks.md).
    """

    text: str
    words: tuple[str, ...] = ()
    grams: Mapping[str, int] = field(default_factory=dict)
    whole_files: bool = False
    identifier: bool = False
    read_share: float = 1.0
    keyword: bool = False  # the keyword channel is on and the query has a word or a pair
    vector: bool = False  # the vector channel is on (the query is embedded)


def plan_query(query: str, params: SearchParams) -> QueryPlan:
    """The plan of ``query`` under ``params`` (its channels, stop words and levers)."""
    keyword_on = "keyword" in params.channels
    words: list[str] = []
    grams: dict[str, int] = {}
    whole = False
    if keyword_on:
        stopwords = params.stopwords if params.drop_stopwords else frozenset()
        words = query_terms(query, stopwords=stopwords)
        grams = query_gram_counts(query)
        whole = params.whole_files and is_long(grams)
        # A CJK run is one word to either store's index. A short one (a name, a title)
        # is searched as a word beside its pairs; a longer one, a clause, by its pairs
        # alone, and a long query's runs all so (local/catalog/words.py).
        words = [t for t in words if not has_cjk(t) or (not whole and len(t) <= RUN_CHARS)]
    return QueryPlan(
        text=query,
        words=tuple(words),
        grams=grams,
        whole_files=whole,
        identifier=names_identifier(query),
        read_share=(1.0 if params.multilingual_encoder and not whole else read_share(query))
        * (1.0 - code_share(query)) ** 2,
        keyword=bool(words or grams),
        vector="vector" in params.channels,
    )
