"""What a chunk is embedded as, and the key its vector is stored under.

A vector belongs to the text it was computed from, not to a path or a chunk id: the
vector store (``local.vectors``) is keyed by a hash of the embedded text, and every chunk
records that key (``vector_key``). A file moved, renamed with its folder, copied, or read
again by a forced pass stores chunks whose keys the store already holds, so nothing is
embedded again and no search ever sees the share of chunks with a vector fall; an edit
embeds only the chunks whose text changed. Chunks that share a text share one vector.
Which model made the vectors is the store's identity (``model.handle.vector_space``), not the
key's: another model or recipe empties the store, never mixes.
"""

from __future__ import annotations

import hashlib

# Bumped when what a chunk is embedded as changes (see embedding_text).
VECTOR_RECIPE = "title+text"
KEY_BITS = 63  # FAISS ids are signed 64-bit and -1 means "no result": keys stay positive


def embedding_text(title: str, text: str) -> str:
    """The text a chunk is embedded as: its file's title above the passage, unless the
    passage's first line is the title (``opens_with``: a text file's first line).

    Long documents rarely repeat what they are on every page (a filing names its company
    and period on the cover); the title carries that into every passage's vector.
    """
    return f"{title}\n{text}" if title and not opens_with(title, text) else text


def opens_with(title: str, text: str) -> bool:
    """Whether the text's first line is its title: the whole title, or what follows the
    file's name in it (``files.document_title``: ``birds — Albatross report``)."""
    first = text[: text.find("\n")] if "\n" in text else text
    first = first.strip().lstrip("#").strip()  # a Markdown heading's marks
    return bool(first) and (first == title or title.endswith(f" — {first}"))


def vector_key(title: str, text: str) -> int:
    """The store key of the vector of a chunk with this title and text: 63 bits of BLAKE2b
    of its embedding text (a collision among a million chunks has odds of about 1 in 10^7)."""
    digest = hashlib.blake2b(
        embedding_text(title, text).encode("utf-8", "surrogatepass"), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") >> (64 - KEY_BITS)
