"""A Milvus store's connection and collections: connecting with retries, calls that
say what failed, the collections' schemas, creating, checking and dropping them.

``MilvusIndex`` adds the rows: files, chunks, searches.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from micro_rag_mcp.core.address import StoreConfig
from micro_rag_mcp.core.errors import StoreMismatch, StoreUnavailable
from micro_rag_mcp.milvus.rows import (
    MAX_TEXT_BYTES,
    SMALL_BYTES,
)

logger = logging.getLogger(__name__)
T = TypeVar("T")
IDENTITY_KEY = "micro_rag.identity"
LAYOUT_KEYS = (
    "keywords",
)  # the identity's keys, beside the version, that say how rows are laid out
CONNECT_TIMEOUT_S = 5.0
# Pings no more often than gRPC servers accept by default (5 min), and none while idle:
# pymilvus pings every 10 s, and a server that limits pings (milvus-lite) sends such a
# client away during a long call (a seal) or when idle, and its next call fails.
GRPC_OPTIONS = {"grpc.keepalive_time_ms": 300_000, "grpc.keepalive_permit_without_calls": 0}
REFUSED_WAIT_S = 1.5  # after a refused connection, times the attempt
RETRIES = 3  # tries of a call whose connection was dropped (never an insert)
# The keywords field holds text stemmed on our side (``stemming``), as FTS5's porter
# tokenizer would index it: milvus-lite's analyzers have no stemmer. Stop words stay in
# the index, as in FTS5 (they count in a chunk's length); queries leave them out. CJK
# runs are also stored as their bigrams, each one ASCII word (``cjk_words.gram_token``): the
# standard tokenizer keeps a run whole, and milvus-lite has no whitespace tokenizer.
ANALYZER: dict[str, Any] = {"tokenizer": "standard", "filter": ["lowercase"]}
CREATE_WAIT_S = 30.0  # for a collection another worker is creating


class MilvusCollections:
    """One store's client (made at first use, shared by the threads of a process) and
    its collections: files, chunks, and the pairs of files with CJK text (``grams``)."""

    def __init__(self, config: StoreConfig) -> None:
        self.config = config
        self.chunks = f"{config.collection}_chunks"
        self.files_name = f"{config.collection}_files"
        self.grams = f"{config.collection}_grams"
        self._client: Any = None
        self._lock = threading.Lock()
        self._seen = False  # the chunks collection exists

    def connect(self) -> Any:
        """The client, reaching the server and its database first if need be; or
        StoreUnavailable, in one sentence."""
        with self._lock:  # threads of one server share the connection
            if self._client is None:
                self._client = self._connected()
            return self._client

    def _connected(self) -> Any:
        for attempt in range(1, RETRIES + 1):
            try:
                return self._client_once()
            except Exception as e:
                # A server that sent a connection away for its pings refuses the next one
                # for gRPC's reconnect back-off (1 s at first): it answered, so try again.
                if attempt == RETRIES or "too many pings" not in str(e).lower():
                    raise self._unavailable(e) from e
                logger.info("the store refused a connection (%s); connecting again", e)
            time.sleep(REFUSED_WAIT_S * attempt)
        raise AssertionError("unreachable")

    def _client_once(self) -> Any:
        from pymilvus import MilvusClient

        client = MilvusClient(
            uri=self.config.uri,
            token=self.config.token,
            db_name=self.config.database,
            timeout=CONNECT_TIMEOUT_S,
            grpc_options=GRPC_OPTIONS,
            # A channel of its own: pymilvus otherwise shares one per address within a
            # process, made with the options of whichever client came first.
            dedicated=True,
        )
        client.list_collections(timeout=CONNECT_TIMEOUT_S)
        return client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception as e:
                logger.debug("closing the store connection: %s", e)

    def _unavailable(self, e: Exception) -> StoreUnavailable:
        reason = getattr(e, "message", None) or str(e) or type(e).__name__
        reason = " ".join(str(reason).split())[:300]
        what = "cannot be reached" if _dropped(e) else "refused a request"
        return StoreUnavailable(f"the store {self.config.url} {what} ({reason})")

    def call(self, fn: Callable[[Any], T], *, retry: bool = True) -> T:
        """Run ``fn(client)``; any failure of the store is a StoreUnavailable.

        A connection the server dropped (a restart, an idle channel it sent away) is made
        again and the call tried again, unless ``retry`` is off: an insert that may have
        landed must not land twice.
        """
        for attempt in range(1, RETRIES + 1):
            client = self.connect()  # a server that cannot be reached is said at once
            try:
                return fn(client)
            except Exception as e:
                if attempt < RETRIES and _released(e):  # refused whole: safe to try again
                    self._load(client, e)
                    continue
                self.close()  # the next call connects again
                if attempt == RETRIES or not retry or not _dropped(e):
                    raise self._unavailable(e) from e
                logger.info("the store connection was dropped (%s); connecting again", e)
            time.sleep(0.2 * attempt)  # a moment for the server, or its restart
        raise AssertionError("unreachable")

    def _load(self, client: Any, cause: Exception) -> None:
        """Load the collections into the server's memory again.

        Milvus keeps a collection loaded across restarts; milvus-lite does not, and
        refuses every read of it until a client loads it."""
        logger.info("the store's collections are not loaded (%s); loading them", cause)
        try:
            for name in (self.files_name, self.chunks, self.grams):
                if client.has_collection(name):
                    client.load_collection(name)
        except Exception as e:
            self.close()
            raise self._unavailable(e) from e

    def exists(self) -> bool:
        """Whether the chunks collection is there (once seen, taken as staying)."""
        if not self._seen:
            self._seen = bool(self.call(lambda c: c.has_collection(self.chunks)))
        return self._seen

    def identity(self) -> dict[str, str] | None:
        """The run identity recorded with the chunks collection, or None (no collection)."""
        if not self.exists():
            return None
        props = self.call(lambda c: c.describe_collection(self.chunks)).get("properties", {})
        raw = props.get(IDENTITY_KEY)
        return dict(json.loads(raw)) if raw else {}

    def vector_space(self) -> str:
        """The vector space the collection's vectors were made in ("" for none yet)."""
        return (self.identity() or {}).get("vector_space", "")

    def create(self, dimension: int, identity: dict[str, str]) -> None:
        """Make the collections, recording ``identity`` (those that exist are kept)."""
        from pymilvus import DataType

        def make(c: Any) -> None:
            if not c.has_collection(self.files_name):
                schema = c.create_schema(auto_id=False)
                schema.add_field("path", DataType.VARCHAR, is_primary=True, max_length=4096)
                for name in ("size", "mtime_ns", "version", "previous", "head_id", "shard_key"):
                    schema.add_field(name, DataType.INT64)
                for name in ("ext", "checksum", "status"):
                    schema.add_field(name, DataType.VARCHAR, max_length=256)
                schema.add_field("error", DataType.VARCHAR, max_length=SMALL_BYTES)
                schema.add_field("indexed_at", DataType.DOUBLE)
                schema.add_field("unused", DataType.FLOAT_VECTOR, dim=2)  # Milvus needs one
                index = c.prepare_index_params()
                index.add_index(field_name="unused", index_type="FLAT", metric_type="L2")
                index.add_index(field_name="status", index_type="INVERTED")  # the counts
                index.add_index(field_name="shard_key", index_type="STL_SORT")  # a share
                _create(c, self.files_name, schema=schema, index_params=index)
            if not c.has_collection(self.grams):
                _create(
                    c,
                    self.grams,
                    schema=self._grams_schema(c),
                    index_params=self._grams_indexes(c),
                )
            if not c.has_collection(self.chunks):
                _create(
                    c,
                    self.chunks,
                    schema=self._chunk_schema(c, dimension),
                    index_params=self._chunk_indexes(c),
                    properties={IDENTITY_KEY: json.dumps(identity, sort_keys=True)},
                )

        self.call(make)

    @staticmethod
    def _chunk_schema(c: Any, dimension: int) -> Any:
        from pymilvus import DataType

        schema = c.create_schema(auto_id=True)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("path", DataType.VARCHAR, max_length=4096)
        for name in ("version", "chunk_index", "char_start", "char_end"):
            schema.add_field(name, DataType.INT64)
        for name in ("line_start", "line_end", "page"):
            schema.add_field(name, DataType.INT64)
        schema.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT_BYTES)
        for name in ("section", "locator"):
            schema.add_field(name, DataType.VARCHAR, max_length=SMALL_BYTES)
        schema.add_field("bucket", DataType.INT64)  # ``milvus_rows.bucket``: a fair sample
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dimension)
        _add_bm25(schema, "keywords")
        return schema

    @staticmethod
    def _grams_schema(c: Any) -> Any:
        """A row per file with CJK text (two or more for a long one): its pairs as
        ``cjk_words.pair_word`` words, for BM25 over whole files (``search.documents``)."""
        from pymilvus import DataType

        schema = c.create_schema(auto_id=True)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("path", DataType.VARCHAR, max_length=4096)
        schema.add_field("version", DataType.INT64)
        _add_bm25(schema, "pairs")
        return schema

    @staticmethod
    def _grams_indexes(c: Any) -> Any:
        index = c.prepare_index_params()
        index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        index.add_index(field_name="path", index_type="INVERTED")
        return index

    @staticmethod
    def _chunk_indexes(c: Any) -> Any:
        index = c.prepare_index_params()
        index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        index.add_index(field_name="dense", index_type="AUTOINDEX", metric_type="IP")
        # A file's chunks are found by path (a write's clean-up, read): never a scan.
        index.add_index(field_name="path", index_type="INVERTED")
        index.add_index(field_name="bucket", index_type="INVERTED")  # a sample's range
        return index

    def check_identity(self, ours: Mapping[str, str], keys: Sequence[str]) -> None:
        """Refuse a store of another version (``index.STORE_VERSION``), or one whose
        recorded ``keys`` of the identity differ from ``ours``."""
        stored = self.identity()
        if stored is None:
            return
        if stored.get("version") != ours.get("version"):
            raise StoreMismatch(
                f"the store {self.config.url} holds an index of version "
                f"{stored.get('version', 'unknown')}, this program reads and writes version "
                f"{ours.get('version')}: index the folder again into another collection, or "
                "drop this one's three collections and index it again"
            )
        differ = [k for k in keys if stored.get(k) != ours.get(k)]
        # No flag sets how rows are laid out: another layout is another release's.
        laid_out = [k for k in differ if k not in stored or k in LAYOUT_KEYS]
        if laid_out:
            raise StoreMismatch(
                f"the store {self.config.url} was made by another release (its "
                f"{' and '.join(laid_out)} are laid out otherwise): index the folder again "
                "into a new collection"
            )
        if differ:
            theirs = ", ".join(f"{k} {stored.get(k)}" for k in differ)
            mine = ", ".join(f"{k} {ours.get(k)}" for k in differ)
            raise StoreMismatch(
                f"the store {self.config.url} was indexed with {theirs}, not {mine}: "
                "use another collection, or the settings it was made with"
            )

    def drop(self) -> None:
        """Remove the collections (tests and benchmarks start clean)."""

        def drop(c: Any) -> None:
            for name in (self.chunks, self.files_name, self.grams):
                if c.has_collection(name):
                    c.drop_collection(name)

        self.call(drop)
        self._seen = False


def _add_bm25(schema: Any, field: str) -> None:
    """A text field read by ``ANALYZER`` and the ``sparse`` field Milvus's BM25 function
    makes of it (no model)."""
    from pymilvus import DataType, Function, FunctionType

    schema.add_field(
        field,
        DataType.VARCHAR,
        max_length=MAX_TEXT_BYTES,
        enable_analyzer=True,
        analyzer_params=ANALYZER,
    )
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=[field],
            output_field_names=["sparse"],
        )
    )


def _released(e: Exception) -> bool:
    """Whether the store refused a request because a collection is not loaded."""
    text = str(e).lower()
    return "not loaded" in text or "state 'released'" in text


def _dropped(e: Exception) -> bool:
    """Whether a failure is the connection's, not the request's."""
    from pymilvus.exceptions import ConnectError, MilvusUnavailableException

    text = str(e).lower()
    return isinstance(e, ConnectError | MilvusUnavailableException) or any(
        word in text for word in ("unavailable", "goaway", "connect", "closed")
    )


def _create(c: Any, name: str, **kw: Any) -> None:
    """Create a collection, unless another worker is doing it (then wait for theirs)."""
    try:
        c.create_collection(name, consistency_level="Strong", **kw)
    except Exception:
        deadline = time.monotonic() + CREATE_WAIT_S
        while not c.has_collection(name):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
