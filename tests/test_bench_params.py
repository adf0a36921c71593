"""The benchmark's JSON record holds every fusion knob."""

from __future__ import annotations

import json

from bench.retrieval import params_record
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.terms import STOPWORDS


def test_params_record_is_json_with_the_stop_words_as_a_sorted_list() -> None:
    record = json.loads(json.dumps(params_record(SearchParams(depth=50))))
    assert record["depth"] == 50 and record["channels"] == ["vector", "keyword"]
    assert record["stopwords"] == sorted(STOPWORDS)
