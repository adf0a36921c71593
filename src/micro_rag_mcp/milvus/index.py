"""The index in Milvus: a chunks collection and a files collection, and every query on them.

``NAME_files`` also holds each path's ``shard_key`` (``store.shard_key``), so a worker
of share I/N asks for its own file rows with one range filter rather than reading every
row of the folder.

``NAME_chunks`` holds each chunk's text, citation fields, dense vector and a BM25 sparse
vector that Milvus computes (a BM25 function, no model) from ``keywords``: the title and
text stemmed as the embedded store's FTS5 index stems them (``text`` stays as written,
for ``read`` and citations). Every chunk carries the ``version`` of its file it belongs
to. ``NAME_files`` holds one row per file (stamp, checksum, status, error) and its
*current* version.

Milvus has no transaction across entities, so a file changes in three steps: its new
chunks are inserted under a new version, its file row is flipped to that version (one
upsert of one entity), then the old version's chunks are deleted. Readers keep only
chunks whose version is their file's current one, so a process killed at any instant
leaves the old state or the new one visible, never both and never half.

The run identity (vector space, chunking and keyword stemming) is a property of the
chunks collection; ``check_identity`` refuses to mix another.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from micro_rag_mcp.core.errors import StoreMismatch, StoreUnavailable
from micro_rag_mcp.milvus.config import StoreConfig, shard_key, shard_range
from micro_rag_mcp.milvus.rows import (
    BUCKETS,
    CHUNK_FIELDS,
    FILE_FIELDS,
    MAX_TEXT_BYTES,
    SMALL_BYTES,
    WRITING,
    ChunkHit,
    FileRow,
    clip,
    file_row,
    hit,
    in_filter,
    literal,
)
from micro_rag_mcp.text.stemming import STEMMING_ID

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

IDENTITY_KEY = "micro_rag.identity"
# Recorded in the identity: what the keywords field holds (stemmed words, CJK bigram words).
KEYWORDS_ID = f"{STEMMING_ID};cjk-bigram-words-1;sample-buckets-1"
# Recorded in the identity: how file rows are laid out (a worker needs their shard keys).
FILES_LAYOUT = "shard-key-range-1"
LAYOUT_KEYS = ("keywords", "files")  # the identity's keys that say how rows are laid out
CONNECT_TIMEOUT_S = 5.0
# Pings no more often than gRPC servers accept by default (5 min), and none while idle:
# pymilvus pings every 10 s, and a server that limits pings (milvus-lite) sends such a
# client away during a long call (a seal) or when idle, and its next call fails.
GRPC_OPTIONS = {"grpc.keepalive_time_ms": 300_000, "grpc.keepalive_permit_without_calls": 0}
REFUSED_WAIT_S = 1.5  # after a refused connection, times the attempt
RETRIES = 3  # tries of a call whose connection was dropped (never an insert)
CREATE_WAIT_S = 30.0  # for a collection another worker is creating
INSERT_BATCH = 1024  # rows per insert or upsert request, at most
INSERT_BYTES = 16 << 20  # and about this much text per request (gRPC caps a message)
QUERY_BATCH = 500  # ids or paths per "in [...]" filter

# The keywords field holds text stemmed on our side (``stemming``), as FTS5's porter
# tokenizer would index it: milvus-lite's analyzers have no stemmer. Stop words stay in
# the index, as in FTS5 (they count in a chunk's length); queries leave them out. CJK
# runs are also stored as their bigrams, each one ASCII word (``cjk.gram_token``): the
# standard tokenizer keeps a run whole, and milvus-lite has no whitespace tokenizer.
ANALYZER: dict[str, Any] = {"tokenizer": "standard", "filter": ["lowercase"]}
T = TypeVar("T")


def _batched(items: Sequence[T], n: int = QUERY_BATCH) -> Iterator[Sequence[T]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def _sized(rows: Sequence[dict[str, Any]]) -> Iterator[Sequence[dict[str, Any]]]:
    """``rows`` in requests of at most ``INSERT_BATCH`` rows and about ``INSERT_BYTES``."""
    start, size = 0, 0
    for i, row in enumerate(rows):
        size += len(row["text"]) + len(row["keywords"]) + 4 * len(row["dense"])
        if i + 1 - start >= INSERT_BATCH or size >= INSERT_BYTES:
            yield rows[start : i + 1]
            start, size = i + 1, 0
    if start < len(rows):
        yield rows[start:]


class MilvusIndex:
    """One connection to the two collections of one index."""

    def __init__(self, config: StoreConfig) -> None:
        self.config = config
        self.chunks = f"{config.collection}_chunks"
        self.files_name = f"{config.collection}_files"
        self._client: Any = None
        self._lock = threading.Lock()
        self._seen = False  # the chunks collection exists

    # -- connection ------------------------------------------------------------------

    def connect(self) -> Any:
        """The client, reaching the server and its database first if need be; or
        StoreUnavailable, in one sentence."""
        with self._lock:  # threads of one server share the connection
            if self._client is None:
                self._client = self._connected()
            return self._client

    def _connected(self) -> Any:
        # pymilvus logs every failed call with its traceback at ERROR; ours says it once.
        logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
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

    def _call(self, fn: Callable[[Any], T], *, retry: bool = True) -> T:
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
        """Load both collections into the server's memory again.

        Milvus keeps a collection loaded across restarts; milvus-lite does not, and
        refuses every read of it until a client loads it."""
        logger.info("the store's collections are not loaded (%s); loading them", cause)
        try:
            for name in (self.files_name, self.chunks):
                if client.has_collection(name):
                    client.load_collection(name)
        except Exception as e:
            self.close()
            raise self._unavailable(e) from e

    # -- collections -----------------------------------------------------------------

    def exists(self) -> bool:
        """Whether the chunks collection is there (once seen, taken as staying)."""
        if not self._seen:
            self._seen = bool(self._call(lambda c: c.has_collection(self.chunks)))
        return self._seen

    def identity(self) -> dict[str, str] | None:
        """The run identity recorded with the chunks collection, or None (no collection)."""
        if not self.exists():
            return None
        props = self._call(lambda c: c.describe_collection(self.chunks)).get("properties", {})
        raw = props.get(IDENTITY_KEY)
        return dict(json.loads(raw)) if raw else {}

    def create(self, dimension: int, identity: dict[str, str]) -> None:
        """Make both collections, recording ``identity`` (if they exist: nothing)."""
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
            if not c.has_collection(self.chunks):
                _create(
                    c,
                    self.chunks,
                    schema=self._chunk_schema(c, dimension),
                    index_params=self._chunk_indexes(c),
                    properties={IDENTITY_KEY: json.dumps(identity, sort_keys=True)},
                )

        self._call(make)

    @staticmethod
    def _chunk_schema(c: Any, dimension: int) -> Any:
        from pymilvus import DataType, Function, FunctionType

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
        schema.add_field(
            "keywords",
            DataType.VARCHAR,
            max_length=MAX_TEXT_BYTES,
            enable_analyzer=True,
            analyzer_params=ANALYZER,
        )
        schema.add_field("bucket", DataType.INT64)  # ``milvus_rows.bucket``: a fair sample
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dimension)
        schema.add_function(
            Function(
                name="bm25",
                function_type=FunctionType.BM25,
                input_field_names=["keywords"],
                output_field_names=["sparse"],
            )
        )
        return schema

    @staticmethod
    def _chunk_indexes(c: Any) -> Any:
        index = c.prepare_index_params()
        index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
        index.add_index(field_name="dense", index_type="AUTOINDEX", metric_type="IP")
        # A file's chunks are found by path (a write's clean-up, read): never a scan.
        index.add_index(field_name="path", index_type="INVERTED")
        index.add_index(field_name="bucket", index_type="INVERTED")  # a sample's range
        return index

    def check_identity(self, ours: dict[str, str], keys: Sequence[str]) -> None:
        """Refuse a store whose recorded ``keys`` of the identity differ from ``ours``."""
        stored = self.identity()
        if stored is None:
            return
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
        """Remove both collections (tests and benchmarks start clean)."""

        def drop(c: Any) -> None:
            for name in (self.chunks, self.files_name):
                if c.has_collection(name):
                    c.drop_collection(name)

        self._call(drop)
        self._seen = False

    # -- files -----------------------------------------------------------------------

    def files(
        self, status: str | None = None, shard: tuple[int, int] | None = None
    ) -> dict[str, FileRow]:
        """Every file row (or those of one status, of one share), by path; the store
        selects them."""
        conditions = [f"status == {literal(status)}"] if status else []
        if shard is not None:
            low, high = shard_range(shard)
            conditions.append(f"shard_key >= {low} and shard_key < {high}")
        where = " and ".join(conditions) or 'path != ""'

        def scan(c: Any) -> list[dict[str, Any]]:
            rows: list[dict[str, Any]] = []
            it = c.query_iterator(
                self.files_name, batch_size=1000, filter=where, output_fields=FILE_FIELDS
            )
            try:
                while batch := it.next():
                    rows.extend(batch)
            finally:
                it.close()
            return rows

        return {r["path"]: file_row(r) for r in self._call(scan)}

    def file_rows(self, paths: Iterable[str]) -> dict[str, FileRow]:
        wanted = sorted(set(paths))
        rows: dict[str, FileRow] = {}
        for batch in _batched(wanted):
            found = self._call(
                lambda c, b=batch: c.query(  # type: ignore[misc]
                    self.files_name, filter=in_filter("path", b), output_fields=FILE_FIELDS
                )
            )
            rows.update((r["path"], file_row(r)) for r in found)
        return rows

    def put_file(self, row: FileRow) -> None:
        self.put_files([row])

    def put_files(self, files: Sequence[FileRow]) -> None:
        """Flip files to their versions (or record them): one upsert, one entity each.

        A row's ``previous`` names the version whose chunks are still to be deleted (0:
        none), so a pass killed before it deletes them leaves the next pass a note.
        """
        now = time.time()
        rows = [
            {
                "path": f.record.path,
                "ext": clip(f.record.ext, 256),
                "size": f.record.size,
                "mtime_ns": f.record.mtime_ns,
                "checksum": f.record.checksum or "",
                "status": f.record.status,
                "error": clip(f.record.error or ""),
                "version": f.version,
                "previous": f.previous,
                "head_id": f.head_id,
                "shard_key": shard_key(f.record.path),
                "indexed_at": now,
                "unused": [0.0, 0.0],
            }
            for f in files
        ]
        for batch in _batched(rows, INSERT_BATCH):
            self._call(lambda c, b=batch: c.upsert(self.files_name, list(b)))  # type: ignore[misc]

    def seal(self) -> None:
        """Seal what was written into indexed segments (Milvus's ``flush``).

        Until then rows sit in growing segments, which milvus-lite searches by brute force
        (a search over 6,000 fresh chunks took 2.2 s, 0.2 s once sealed). A cluster seals
        on its own by size and time, so this is asked once per pass, not per write.
        """

        def seal(c: Any) -> None:
            for name in (self.chunks, self.files_name):
                c.flush(name)

        self._call(seal)

    def drop_files(self, paths: Sequence[str]) -> None:
        """Remove files' rows, one request per ``QUERY_BATCH`` of them."""
        for batch in _batched(paths):
            self._call(lambda c, b=batch: c.delete(self.files_name, filter=in_filter("path", b)))  # type: ignore[misc]

    def count_files(self) -> tuple[int, int]:
        """Files indexed and failed.

        The total comes from row counts, and only the rows that are not indexed are
        counted by filter: milvus-lite answers a filtered count by building every row
        that matches, which for ``status == "ok"`` over 200,000 files was most of a
        search's time at 1M chunks."""
        total = self._count(self.files_name, "")
        failed = self._count(self.files_name, f"status == {literal('failed')}")
        writing = self._count(self.files_name, f"status == {literal(WRITING)}")
        return total - failed - writing, failed

    def count_chunks(self) -> int:
        return self._count(self.chunks, "")  # no filter: Milvus answers from its row counts

    def _count(self, collection: str, where: str) -> int:
        rows = self._call(lambda c: c.query(collection, filter=where, output_fields=["count(*)"]))
        return int(rows[0]["count(*)"]) if rows else 0

    # -- chunks ----------------------------------------------------------------------

    def insert_chunks(self, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Store chunk rows (``chunk_rows``), up to ``INSERT_BATCH`` per request; their new ids."""
        ids: list[int] = []
        for batch in _sized(rows):
            done = self._call(lambda c, b=batch: c.insert(self.chunks, list(b)), retry=False)  # type: ignore[misc]
            ids.extend(int(i) for i in done["ids"])
        return ids

    def delete_strays(self, paths: Sequence[tuple[str, int]]) -> None:
        """Delete each path's chunks but those of the given version (0: all of them): what
        a replaced version or a killed write left.

        One request per ``QUERY_BATCH`` files: a delete by filter makes milvus-lite read
        every row of the collection, whatever the filter."""
        for batch in _batched(paths):
            new = [p for p, v in batch if v == 0]
            kept = [(p, v) for p, v in batch if v != 0]
            parts = [in_filter("path", new)] if new else []
            parts += [f"(path == {literal(p)} and version != {int(v)})" for p, v in kept]
            where = " or ".join(parts)
            self._call(lambda c, w=where: c.delete(self.chunks, filter=w))  # type: ignore[misc]

    def delete_chunks(self, path: str) -> None:
        """Delete every chunk of one file."""
        self._call(lambda c: c.delete(self.chunks, filter=f"path == {literal(path)}"))

    def versions_of(self, path: str) -> set[int]:
        rows = self._call(
            lambda c: c.query(
                self.chunks, filter=f"path == {literal(path)}", output_fields=["version"]
            )
        )
        return {int(r["version"]) for r in rows}

    # -- search ----------------------------------------------------------------------

    def dense(self, vector: npt.NDArray[np.float32], limit: int) -> list[ChunkHit]:
        found = self._call(
            lambda c: c.search(
                self.chunks,
                data=[[float(x) for x in vector]],
                anns_field="dense",
                limit=limit,
                output_fields=["path", "version"],
                search_params={"metric_type": "IP"},
            )
        )
        return [hit(h, h["distance"]) for h in found[0]]

    def keyword(self, words: Sequence[str], limit: int) -> list[tuple[ChunkHit, list[str]]]:
        """The best ``limit`` chunks for any of ``words`` (stemmed, as the stored keywords
        are) by Milvus's own BM25, each with its keyword words (``milvus_keywords``
        scores them). milvus-lite reports the score negated: taken as is."""
        if not words:
            return []
        found = self._call(
            lambda c: c.search(
                self.chunks,
                data=[" ".join(words)],
                anns_field="sparse",
                limit=limit,
                output_fields=["path", "version", "keywords"],
                search_params={"metric_type": "BM25"},
            )
        )
        return [(hit(h, abs(h["distance"])), h["entity"]["keywords"].split()) for h in found[0]]

    def sample_keywords(self, buckets: int, limit: int) -> list[str]:
        """The keyword text of the chunks in the first ``buckets`` of ``BUCKETS`` (at
        most ``limit`` of them): a sample of the whole collection, spread over every
        file whatever order the files were written in."""
        where = "" if buckets >= BUCKETS else f"bucket < {int(buckets)}"
        rows = self._call(
            lambda c: c.query(self.chunks, filter=where, output_fields=["keywords"], limit=limit)
        )
        return [str(r["keywords"]) for r in rows]

    def vectors(self, ids: Sequence[int]) -> dict[int, list[float]]:
        out: dict[int, list[float]] = {}
        for batch in _batched(list(ids)):
            rows = self._call(
                lambda c, b=batch: c.query(  # type: ignore[misc]
                    self.chunks, filter=in_filter("id", b), output_fields=["id", "dense"]
                )
            )
            out.update((int(r["id"]), list(r["dense"])) for r in rows)
        return out

    def chunk_rows(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for batch in _batched(list(ids)):
            rows.extend(
                self._call(
                    lambda c, b=batch: c.query(  # type: ignore[misc]
                        self.chunks, filter=in_filter("id", b), output_fields=CHUNK_FIELDS
                    )
                )
            )
        return rows

    def file_chunk_rows(self, path: str, version: int) -> list[dict[str, Any]]:
        """Every chunk of one file's version, in order."""
        where = f"path == {literal(path)} and version == {int(version)}"
        rows = self._call(lambda c: c.query(self.chunks, filter=where, output_fields=CHUNK_FIELDS))
        return sorted(rows, key=lambda r: int(r["chunk_index"]))


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
