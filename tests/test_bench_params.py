"""The benchmark's JSON record holds every fusion knob."""

from __future__ import annotations

import json

from bench.retrieval import params_record
from micro_rag_mcp.search.fusion import SearchParams


def test_params_record_is_json() -> None:
    record = json.loads(json.dumps(params_record(SearchParams(depth=50))))
    assert record["depth"] == 50 and record["channels"] == ["vector", "keyword"]
