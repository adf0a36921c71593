"""The pieces of loading an encoder (``embedder.load_embedder`` puts them together).

The weights file is found in its package and checked against its pinned sha256
(``files``), then read into arrays (``graphs.read_encoder``, numpy only). The graph that
declares them (a few kB) is shipped in this package and checked the same way
(``files.shipped_graph``). The session is given the arrays themselves
(``external_weights``). ``quantized`` (MiniLM only) is an int8 copy made by
onnxruntime's dynamic quantization, built with onnx (the ``graphs`` extra) in a scratch
folder.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from micro_rag_mcp.core.errors import ModelUnavailable
from micro_rag_mcp.model.files import minilm_file, minilm_tokenizer_file

if TYPE_CHECKING:
    from micro_rag_mcp.model.graphs import EncoderFiles
    from micro_rag_mcp.model.tokens import TokenizesBatches

logger = logging.getLogger(__name__)

E5_MAX_LENGTH = 512  # tokens; e5 at 256 ranked below MiniLM on SciFact (0.640 vs 0.662)
E5_PREFIXES = ("passage: ", "query: ")


MAX_SEQ_LENGTH = 256  # MiniLM's tokens


def tokenizer_for(files: EncoderFiles) -> TokenizesBatches:
    """The encoder's tokenizer: MiniLM's from its kept files (``bert_tokenizer``), or
    e5's rebuilt from its vocabulary."""
    if files.vocabulary is None:
        from micro_rag_mcp.model.bert_tokenizer import BertTokenizer

        chars = minilm_file("chars.json")
        return BertTokenizer.from_files(minilm_tokenizer_file(), chars, MAX_SEQ_LENGTH)
    from micro_rag_mcp.model.e5_tokenizer import E5Tokenizer

    return E5Tokenizer(files.vocabulary, E5_MAX_LENGTH)


def quantized(files: EncoderFiles, work_dir: Path | None) -> bytes:
    """Dynamic int8 quantization (per channel) of the weights' matrix products.

    onnxruntime quantizes files, not graphs in memory: the two files live in a temporary
    folder inside ``work_dir`` (the index folder, for a server) and are gone on return.
    """
    import tempfile

    import numpy as np

    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as e:
        raise ModelUnavailable(
            f"--precision int8 needs the onnx package ({e}). Fix: run "
            f"`{sys.executable} -m pip install 'micro-rag-mcp[graphs]'`, or use fp32."
        ) from e

    from micro_rag_mcp.model.bert_graph import build_bert_model

    arrays = dict(files.weights.tensors)
    values, scales = files.weights.table or (None, None)
    if values is not None and scales is not None:
        arrays["embeddings.word_embeddings.weight"] = values.astype(np.float32) * scales
    model = build_bert_model(arrays, files.config)
    with tempfile.TemporaryDirectory(prefix="quantize-", dir=work_dir) as tmp:
        src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, src)
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=True)
        return dst.read_bytes()
