"""The pieces of loading an encoder (``embedder.load_embedder`` puts them together).

The weights file is found in its package and checked against its pinned sha256
(``files``), then read into arrays (``graphs.read_encoder``, numpy only). The graph that
declares them (a few kB) is shipped in this package and checked the same way
(``files.shipped_graph``). The session is given the arrays themselves
(``external_weights``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

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
