"""The keyword channel on a Milvus store, scored as the embedded store's FTS5 scores it.

Both stores rank by BM25 with k1 = 1.2 and b = 0.75, but not with the same idf. FTS5's
is log((N - n + 0.5) / (n + 0.5)), floored at 1e-6: a word in more than half the chunks
weighs nothing, and the embedded channel leaves such words out of its query
(``keywords``). Milvus's, like Lucene's, is log(1 + (N - n + 0.5) / (n + 0.5)): it never
falls to 0, and weighs a word of middling frequency more against a rare one. The same
query then ordered chunks differently on the two stores (sec10q_dev, keyword channel:
Recall@5 0.782 embedded, 0.842 Milvus), and fused results differed with it.

So Milvus only proposes. The words' document counts come from a sample of the collection
(``KeywordStats``: every chunk up to ``SAMPLE_ROWS``, past that the chunks of a few hash
buckets); the common words are left out as the embedded channel leaves them out;
Milvus's BM25 proposes ``POOL`` times the candidates asked for; and each is scored here by
FTS5's formula from its stored keyword words. Counting words in the store itself
(``TEXT_MATCH``) would cost a query per word, and milvus-lite answers one by reading
every row.

Up to ``SAMPLE_ROWS`` chunks, the scores are FTS5's exactly. Past it, a word's count is
estimated from the sample, or counted in the candidates when more of them hold it (a rare
word may be in none of the sample); the mean length is the sample's.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from micro_rag_mcp.milvus.cjk_words import is_gram_token
from micro_rag_mcp.milvus.index import MilvusIndex
from micro_rag_mcp.milvus.rows import BUCKETS, ChunkHit
from micro_rag_mcp.search.terms import query_weight, searched_terms
from micro_rag_mcp.text.stemming import stem_words, words

K1 = 1.2  # FTS5's bm25() constants
B = 0.75
IDF_FLOOR = 1e-6  # FTS5's idf of a word in half the chunks or more
POOL = 3  # Milvus proposes this many candidates per one asked for
SAMPLE_ROWS = 16_384  # chunks in a sample, at most: Milvus's largest query result
# Past SAMPLE_ROWS chunks, the sample is taken again once the collection has grown or
# shrunk by this share (below it, at every change of the count).
RESAMPLE_SHARE = 1 / 32


@dataclass(frozen=True, slots=True)
class Sample:
    """Word statistics of ``rows`` chunks of a collection that held ``chunks``."""

    chunks: int
    rows: int
    having: Counter[str]  # sampled chunks holding each word
    mean: float  # words per sampled chunk
    limit: int = SAMPLE_ROWS  # the most chunks a sample takes
    cjk_rows: int = 0  # sampled chunks that hold CJK text (a bigram)

    @property
    def whole(self) -> bool:
        return self.rows >= self.chunks

    def outdated(self, chunks: int) -> bool:
        return outdated(self.chunks, chunks, whole=self.whole, limit=self.limit)

    def share(self, word: str) -> float:
        """About what share of the collection's chunks hold the word; for a CJK bigram,
        of its chunks that hold CJK text, as the embedded store counts them."""
        among = self.cjk_rows if is_gram_token(word) else self.rows
        return self.having[word] / among if among else 0.0

    def among(self, word: str, chunks: int) -> int:
        """Of the collection's ``chunks``, about how many a word's share is of."""
        if not is_gram_token(word):
            return chunks
        return round(chunks * self.cjk_rows / self.rows) if self.rows else 0


def outdated(taken: int, chunks: int, *, whole: bool, limit: int = SAMPLE_ROWS) -> bool:
    """Whether a sample taken at ``taken`` chunks is to be taken again at ``chunks``: a
    whole one (or one of a small collection) at every change of the count, a part once
    the collection has grown or shrunk by ``RESAMPLE_SHARE``."""
    if chunks == taken:
        return False
    if whole or chunks <= limit:
        return True
    return abs(chunks - taken) > taken * RESAMPLE_SHARE


class Outdating(Protocol):
    def outdated(self, chunks: int) -> bool: ...


S = TypeVar("S", bound=Outdating)


class Kept(Generic[S]):
    """One collection's sample, kept between searches and taken again as it changes."""

    def __init__(self, take: Callable[[MilvusIndex, int], S]) -> None:
        self._take = take  # the sample of a collection of so many chunks
        self._lock = threading.Lock()
        self._kept: S | None = None

    def forget(self) -> None:
        """Take the sample again at the next search (this process changed the store)."""
        with self._lock:
            self._kept = None

    def sample(self, index: MilvusIndex, chunks: int) -> S:
        with self._lock:
            if self._kept is None or self._kept.outdated(chunks):
                self._kept = self._take(index, chunks)
            return self._kept


class KeywordStats(Kept[Sample]):
    """The chunks' word counts: ``sample_rows`` chunks at most."""

    def __init__(self, sample_rows: int = SAMPLE_ROWS) -> None:
        super().__init__(lambda index, chunks: _taken(index, chunks, sample_rows))


def _taken(index: MilvusIndex, chunks: int, limit: int) -> Sample:
    # Aim a tenth under the limit: the chunks in a range of buckets vary in number.
    buckets = BUCKETS if chunks <= limit else max(1, BUCKETS * limit * 9 // 10 // chunks)
    having: Counter[str] = Counter()
    length = cjk_rows = 0
    rows = index.sample_keywords(buckets, limit)
    for row in rows:
        kept = row.split()
        length += len(kept)
        distinct = set(kept)
        having.update(distinct)
        cjk_rows += any(is_gram_token(w) for w in distinct)
    mean = length / len(rows) if rows else 1.0
    return Sample(chunks, len(rows), having, max(mean, 1.0), limit, cjk_rows)


def keyword_hits(
    index: MilvusIndex,
    stats: KeywordStats,
    terms: Sequence[str],
    grams: Sequence[str],
    limit: int,
) -> list[ChunkHit]:
    """The best ``limit`` chunks for the query's words ``terms`` and CJK bigram words
    ``grams``, best first, with FTS5's BM25 score."""
    return keyword_evidence(index, stats, terms, grams, limit)[0]


def keyword_evidence(
    index: MilvusIndex,
    stats: KeywordStats,
    terms: Sequence[str],
    grams: Sequence[str],
    limit: int,
) -> tuple[list[ChunkHit], float]:
    """``keyword_hits``, and the summed idf of the words searched (``keywords.idf_sum``)."""
    found_words, found_pairs, idf = keyword_parts(index, stats, terms, grams, limit)
    return merged(found_words, found_pairs), idf


def keyword_parts(
    index: MilvusIndex,
    stats: KeywordStats,
    terms: Sequence[str],
    grams: Sequence[str],
    limit: int,
    chunks: int | None = None,
) -> tuple[list[ChunkHit], list[ChunkHit], float]:
    """The best ``limit`` chunks by the words' BM25 and by the CJK pairs', apart (the
    embedded store searches them in two tables and adds the scores), best first; and the
    summed idf of what was searched. ``chunks``: the collection's count, if known."""
    # Each term is an FTS5 phrase: two words of one stem count twice, as they do there.
    phrases = [w for t in terms for w in stem_words(words(t))] + list(grams)
    if chunks is None:
        chunks = index.count_chunks() if phrases else 0
    if not phrases or chunks == 0:
        return [], [], 0.0
    sample = stats.sample(index, chunks)
    among = {p: sample.among(p, chunks) for p in phrases}  # a bigram's: the CJK chunks
    having = {p: sample.share(p) * among[p] for p in phrases}
    shares = {p: sample.share(p) for p in phrases}
    # Words and bigrams are chosen apart, as the embedded store searches them (two tables).
    kept = set(
        searched_terms(
            list(dict.fromkeys(p for p in phrases if p not in grams)), shares, alone=not grams
        )
    )
    kept |= set(searched_terms(list(dict.fromkeys(grams)), shares))
    pairs = set(grams)
    asked = [p for p in phrases if p in kept and p not in pairs]
    asked += [p for p in phrases if p in kept and p in pairs]
    # Searched apart too: a long CJK query's hundreds of pairs would otherwise choose the
    # pool, and a chunk that holds only its one Latin word would not be in it.
    split = ([p for p in asked if p not in pairs], [p for p in asked if p in pairs])
    pools = [
        index.keyword(list(dict.fromkeys(part)), POOL * limit) if part else [] for part in split
    ]
    if not sample.whole:
        seen = {h.id: kept for found in pools for h, kept in found}  # a chunk once
        in_found = Counter(w for kept in seen.values() for w in set(kept) & set(asked))
        having = {p: max(n, in_found[p]) for p, n in having.items()}
    idf = {p: fts5_idf(among[p], having[p]) for p in asked}
    parts = []
    for part, found in zip(split, pools, strict=True):
        scored = [(h, bm25(part, idf, kept, sample.mean)) for h, kept in found]
        scored = sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0].id))
        parts.append([ChunkHit(h.id, score, h.path, h.version) for h, score in scored[:limit]])
    # What the query weighs, about as the embedded store sums it: each distinct term once
    # (two words of one stem are two terms there, each weighing its stem's idf), each pair
    # once. A term of several words (``max_length``) is one FTS5 phrase there, with its
    # own idf; here its words' idf are summed. Each pair counts (once); of the words,
    # those no chunk holds count only when they outweigh the others (``query_weight``).
    weighed = [p for t in dict.fromkeys(terms) for p in stem_words(words(t))]
    weight = query_weight((idf[p], having[p] > 0) for p in weighed if idf.get(p, 0.0) > IDF_FLOOR)
    weight += sum(idf[p] for p in dict.fromkeys(grams) if idf.get(p, 0.0) > IDF_FLOOR)
    return parts[0], parts[1], weight


def merged(first: Sequence[ChunkHit], second: Sequence[ChunkHit]) -> list[ChunkHit]:
    """Two hit lists as one: a chunk in both gets the sum, best first."""
    hits = {h.id: h for h in first}
    for h in second:
        was = hits.get(h.id)
        hits[h.id] = h if was is None else ChunkHit(h.id, was.score + h.score, h.path, h.version)
    return sorted(hits.values(), key=lambda h: (-h.score, h.id))


def fts5_idf(chunks: float, having: float) -> float:
    """FTS5's idf of a word found in ``having`` of ``chunks`` chunks."""
    value = math.log((chunks - having + 0.5) / (having + 0.5))
    return value if value > 0.0 else IDF_FLOOR


def bm25(
    phrases: Sequence[str], idf: Mapping[str, float], chunk: Sequence[str], mean: float
) -> float:
    """FTS5's bm25() of a chunk (its keyword words) for the phrases, made positive."""
    return counted_bm25(phrases, idf, Counter(chunk), len(chunk), mean)


def counted_bm25(
    phrases: Sequence[str],
    idf: Mapping[str, float],
    counts: Mapping[str, int],
    length: int,
    mean: float,
) -> float:
    """``bm25`` of a text of ``length`` words that holds each phrase ``counts`` times."""
    norm = K1 * (1.0 - B + B * length / mean)
    found = [(p, counts.get(p, 0)) for p in phrases]
    return sum(idf[p] * n * (K1 + 1.0) / (n + norm) for p, n in found if n)
