"""The fusions kept for comparison, out of the product: per-query shares and rank fusion.

The product ranks with one fusion (``search.fusion.fuse``, a convex share). These two
were measured against it and did not hold on every dev collection (docs/benchmarks.md):

* ``adaptive``: the vector score placed between the lowest and the best candidate's, and
  the keyword share taken per query from the keyword channel's lead (a rare exact token
  is a spike, a question of common words is flat) and its agreement with the vector
  channel;
* ``rrf``: reciprocal rank fusion.

``bench.fusion_lab`` scores them on captured candidates (``fused``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from micro_rag_mcp.search.fusion import (
    Candidates,
    SearchParams,
    fuse,
    prose_share,
    vector_estimates,
    vector_weight,
)


@dataclass(frozen=True, slots=True)
class LabParams:
    """The knobs of the fusions kept for comparison."""

    fusion: str = "convex"  # convex (the product's), adaptive or rrf
    keyword_share: float = 0.65  # adaptive: the keyword share at full evidence
    keyword_floor: float = 0.0  # adaptive: the keyword share without evidence
    lead_rank: int = 3  # adaptive: the lead is the best file's BM25 over this rank's file's
    agree_files: int = 5  # adaptive: agreement of the keyword channel's best files ...
    agree_among: int = 5  # ... with the vector channel's best files
    vector_low: float | None = None  # adaptive: V's zero; None: the lowest candidate's
    rrf_k: float = 20.0  # rrf only
    vector_weight: float = 1.0  # rrf only
    keyword_weight: float = 1.25  # rrf only


def fused(c: Candidates, params: SearchParams, lab: LabParams) -> dict[int, float]:
    """Each candidate's relevance under ``lab.fusion``."""
    if lab.fusion == "rrf":
        return rrf(
            [
                ([cid for cid, _ in c.vector], lab.vector_weight),
                ([cid for cid, _ in c.keyword], lab.keyword_weight),
            ],
            lab.rrf_k,
        )
    if lab.fusion == "convex":
        return fuse(c, params).fused
    vector_scores = vector_estimates(c, params.head_weight) if c.vector_ran else {}
    channels = int(c.vector_ran) + int(c.keyword_ran)
    share = keyword_share(c, vector_scores, lab) if channels == 2 else None
    if share is not None and params.judge_code:
        share *= prose_share(c)
    return adaptive(vector_scores, dict(c.keyword), share, lab.vector_low)


def keyword_share(c: Candidates, vector: Mapping[int, float], lab: LabParams) -> float:
    """The keyword channel's share of this query's relevance: the larger of its lead
    (1 - the ``lead_rank``-th best file's BM25 over the best's) and its agreement (the
    share of its best ``agree_files`` files among the vector channel's best
    ``agree_among``), from ``keyword_floor`` to ``keyword_share``."""
    keyword_files = _files(c.heads, c.keyword)
    if not keyword_files:
        return 0.0
    scores = list(keyword_files.values())
    best = scores[0]
    ref = scores[lab.lead_rank - 1] if len(scores) >= lab.lead_rank else 0.0
    lead = 1.0 - ref / best if best > 0 else 0.0
    by_vector = sorted(vector.items(), key=lambda item: (-item[1], item[0]))
    near = set(list(_files(c.heads, by_vector))[: lab.agree_among])
    top = list(keyword_files)[: lab.agree_files]
    agreement = sum(f in near for f in top) / len(top)
    floor = lab.keyword_floor
    share = floor + (lab.keyword_share - floor) * max(lead, agreement)
    return 1.0 - vector_weight(c) * (1.0 - share)


def _files(heads: Mapping[int, int], hits: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Each file's best score (a file named by its first chunk), in the order of ``hits``."""
    by_file: dict[int, float] = {}
    for cid, score in hits:  # best first
        by_file.setdefault(heads.get(cid, cid), score)
    return by_file


def adaptive(
    vector: Mapping[int, float],
    keyword: Mapping[int, float],
    share: float | None,
    vector_low: float | None = None,
) -> dict[int, float]:
    """``(1 - share) * V + share * K`` for every candidate; ``share`` None: only one
    channel ran, and it gets the whole weight."""
    if share is None:
        share = 0.0 if vector else 1.0
    v_low = min(vector.values(), default=0.0) if vector_low is None else vector_low
    v_span = max(vector.values(), default=0.0) - v_low
    k_best = max(keyword.values(), default=0.0)
    out: dict[int, float] = {}
    for cid in vector.keys() | keyword.keys():
        v = 0.0
        if cid in vector:
            v = (vector[cid] - v_low) / v_span if v_span > 0 else 1.0
        k = keyword[cid] / k_best if cid in keyword and k_best > 0 else 0.0
        out[cid] = (1.0 - share) * v + share * k
    return out


def rrf(rankings: Sequence[tuple[Sequence[int], float]], k: float) -> dict[int, float]:
    """Reciprocal rank fusion: sum over channels of weight / (k + rank), ranks from 1."""
    out: dict[int, float] = {}
    for ids, weight in rankings:
        for rank, cid in enumerate(ids, 1):
            out[cid] = out.get(cid, 0.0) + weight / (k + rank)
    return out
