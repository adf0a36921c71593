"""Which approximate index: HNSW over floats or 8-bit codes, or IVF with 8-bit codes.

    .venv/bin/python -m bench.ann_choice --synthetic 100000
    .venv/bin/python -m bench.ann_choice --vectors <tmp>/bench-scifact-1000/index/faiss.index

Every candidate is asked for 200 neighbours (the engine's ``depth``); with 8-bit codes
the candidates are re-scored with the exact vectors, as ``vectors.py`` does. Recall is
against an exact scan; times are single-threaded, one query at a time. With
``--vectors`` (a saved ``faiss.index`` of real embeddings) the queries are 200 of the
saved vectors, each excluded from its own answers; with ``--synthetic`` they are new
points of the clusters ``bench.perf_search`` draws.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.perf_search import clustered_vectors
from micro_rag_mcp.local.vectors.graph import EF_CONSTRUCTION

DEPTH = 200


def _real(path: Path) -> npt.NDArray[np.float32]:
    import faiss

    index = faiss.read_index(str(path))
    flat: Any = faiss.downcast_index(index.index)
    count = int(flat.ntotal)
    return faiss.rev_swig_ptr(flat.get_xb(), count * index.d).reshape(count, -1).copy()


def _timed(
    search: Callable[[npt.NDArray[np.float32]], npt.NDArray[np.int64]],
    queries: npt.NDArray[np.float32],
) -> tuple[float, list[npt.NDArray[np.int64]]]:
    times, found = [], []
    for q in queries:
        started = time.perf_counter()
        found.append(search(q))
        times.append(time.perf_counter() - started)
    return float(np.median(times) * 1000), found


def _recall(found: Sequence[Sequence[int]], truth: Sequence[Sequence[int]], k: int) -> float:
    return float(
        np.mean([len(set(f[:k]) & set(t[:k])) / k for f, t in zip(found, truth, strict=True)])
    )


def main(argv: list[str] | None = None) -> int:
    import faiss

    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--synthetic", type=int, help="this many clustered synthetic vectors")
    p.add_argument("--vectors", type=Path, help="a saved faiss.index of real vectors")
    p.add_argument(
        "--ef-construction", type=int, default=EF_CONSTRUCTION, help="HNSW build breadth"
    )
    args = p.parse_args(argv)
    faiss.omp_set_num_threads(1)
    if args.vectors:
        base = _real(args.vectors)
        picked = np.random.default_rng(0).choice(len(base), 200, replace=False)
        queries, skip = base[picked], 1  # each query is in the base: leave itself out
    else:
        base, queries, skip = clustered_vectors(args.synthetic, 1), clustered_vectors(200, 2), 0
    n, d = base.shape
    exact = faiss.IndexFlatIP(d)
    exact.add(base)

    def rescored(ids: npt.NDArray[np.int64], q: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]:
        ids = ids[ids >= 0]
        return ids[np.argsort(-(base[ids] @ q))]

    ms, truth = _timed(lambda q: exact.search(q.reshape(1, -1), DEPTH + skip)[1][0][skip:], queries)
    print(f"{n} vectors of {d}; exact scan p50 {ms:.2f} ms; efConstruction {args.ef_construction}")
    print("| index | build s | bytes/vector | p50 ms | recall@10 | recall@50 | recall@200 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")

    def report(name: str, build_s: float, index: Any, search: Callable[..., Any]) -> None:
        ms, found = _timed(search, queries)
        found = [f[skip:] for f in found]
        size = len(faiss.serialize_index(index)) / n
        recalls = " | ".join(f"{_recall(found, truth, k):.3f}" for k in (10, 50, 200))
        print(f"| {name} | {build_s:.1f} | {size:.0f} | {ms:.2f} | {recalls} |")

    for kind in ("flat", "sq8"):
        started = time.perf_counter()
        if kind == "flat":
            hnsw: Any = faiss.IndexHNSWFlat(d, 16, faiss.METRIC_INNER_PRODUCT)
        else:
            hnsw = faiss.IndexHNSWSQ(
                d, faiss.ScalarQuantizer.QT_8bit, 16, faiss.METRIC_INNER_PRODUCT
            )
            hnsw.train(base)
        hnsw.hnsw.efConstruction = args.ef_construction
        hnsw.add(base)
        built = time.perf_counter() - started
        for ef in (200, 400):
            hnsw.hnsw.efSearch = ef

            def search(
                q: npt.NDArray[np.float32], h: Any = hnsw, codes: bool = kind == "sq8"
            ) -> Any:
                ids = h.search(q.reshape(1, -1), DEPTH + skip)[1][0]
                return rescored(ids, q) if codes else ids

            report(f"HNSW M16 {kind} ef{ef}", built, hnsw, search)
    nlist = int(4 * np.sqrt(n))
    started = time.perf_counter()
    ivf: Any = faiss.IndexIVFScalarQuantizer(
        faiss.IndexFlatIP(d), d, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    ivf.train(base[:: max(1, n // (nlist * 50))])
    ivf.add(base)
    built = time.perf_counter() - started
    for nprobe in (16, 32, 64):
        ivf.nprobe = nprobe
        report(
            f"IVF{nlist} sq8 nprobe{nprobe}",
            built,
            ivf,
            lambda q: rescored(ivf.search(q.reshape(1, -1), DEPTH + skip)[1][0], q),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
