"""Whole files on a Milvus store, for long CJK queries, scored as the embedded store
scores them.

The embedded store ranks a long CJK query's files by FTS5's BM25 over each file's pairs
(``files_cjk``, ``search.documents``). A Milvus text field holds 64 KiB, about 6,500
pairs, so the store keeps a longer file in several grams rows (``rows.gram_rows``), and
Milvus's BM25 scores each row alone: such a file was ranked by its best part, each part
measured against the parts' lengths and counts (LeCaRD dev, keyword channel: 0.6092 on
the store against 0.6175 embedded).

So Milvus only proposes here too, as it does for passages (``keywords``): of the rows its
BM25 finds, the best ``RESCORED`` files are read back whole (all their rows) and scored by
FTS5's formula over their whole text. How many files hold each pair, how many files have
CJK text and their mean length come from a sample of whole files (``FileSample``: the
files whose first chunk falls in a range of hash buckets, widened until they hold
``SAMPLE_PAIRS`` pairs), or from the files read back when more of them hold a pair. A
folder whose CJK files hold fewer pairs is sampled whole, and its scores are the embedded
store's exactly. LeCaRD dev, keyword channel: 0.6092 before, 0.6139 with a sample of a
fifth of its cases (11 s to take, once; kept until the store's chunks change by a 32nd),
0.6155 with exact counts, 0.6175 embedded (docs/benchmarks.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from micro_rag_mcp.milvus.index import MilvusIndex
from micro_rag_mcp.milvus.keywords import POOL, Kept, KeywordStats, bm25, fts5_idf, outdated
from micro_rag_mcp.milvus.rows import BUCKETS
from micro_rag_mcp.search.documents import document_terms
from micro_rag_mcp.text.cjk import gram_token, pair_word

SAMPLE_PAIRS = 8_000_000  # a sample takes files until they hold this many pairs
FIRST_FILES = 256  # about how many files the first range of buckets holds
RESCORED = 100  # files Milvus proposes that are scored again whole


@dataclass(frozen=True, slots=True)
class FileSample:
    """Pair statistics of the ``sampled`` files with CJK text among the ``share`` of a
    collection's files a sample took, when the collection held ``chunks`` chunks."""

    chunks: int
    share: float  # of the collection's files, the sample's (1: all of them)
    sampled: int  # sampled files with CJK text
    having: Counter[str]  # sampled files holding each pair word
    mean: float  # pairs per sampled file

    @property
    def whole(self) -> bool:
        return self.share >= 1.0

    @property
    def files(self) -> float:
        """About how many files of the collection have CJK text."""
        return self.sampled / self.share

    def outdated(self, chunks: int) -> bool:
        return outdated(self.chunks, chunks, whole=self.whole)

    def holding(self, word: str) -> float:
        """About how many files of the collection hold a pair word."""
        return self.having[word] / self.share


class FileStats(Kept[FileSample]):
    """The whole files' pair counts: files until they hold ``sample_pairs`` pairs, the
    first range of buckets about ``first_files`` of them."""

    def __init__(self, sample_pairs: int = SAMPLE_PAIRS, first_files: int = FIRST_FILES) -> None:
        super().__init__(lambda index, chunks: _taken(index, chunks, sample_pairs, first_files))


def _taken(index: MilvusIndex, chunks: int, budget: int, first: int) -> FileSample:
    """The files of a first range of buckets, then of as many more as the files seen say
    hold the rest of ``budget`` pairs, until they do or every file is taken: a folder of
    short files is sampled in more of them than one of books. ``first``: about how many
    files the first range holds."""
    files = sum(index.count_files())
    step = BUCKETS if files <= first else max(1, BUCKETS * first // files)
    having: Counter[str] = Counter()
    sampled = length = start = 0
    while start < BUCKETS and length < budget:
        end = min(BUCKETS, start + step)
        heads = index.sample_heads(start, end)
        rows = index.grams_of(heads)
        for path, version in heads.items():
            words = rows.get((path, version))
            if words:
                sampled += 1
                length += len(words)
                having.update(set(words))
        # the next range: as many buckets as the rest of the budget needs at the density
        # seen so far (twice as many if none held a pair yet)
        step = -(-(budget - length) * end // length) if length else 2 * step
        start = end
    mean = length / sampled if sampled else 1.0
    return FileSample(chunks, start / BUCKETS, sampled, having, max(mean, 1.0))


def whole_file_hits(
    index: MilvusIndex,
    stats: KeywordStats,
    files: FileStats,
    counts: Mapping[str, int],
    limit: int,
    chunks: int,
) -> list[tuple[str, int, float]]:
    """The files that best match a long CJK query's pairs (``counts``, see
    ``documents.document_terms``: their shares are the sampled passages'), by FTS5's BM25
    over each file's whole text: (path, version, score), best first, at most
    ``RESCORED`` of them from the ``POOL`` times ``limit`` rows Milvus's BM25 proposes."""
    if not counts or chunks == 0:
        return []
    sample = stats.sample(index, chunks)
    shares = {g: sample.share(gram_token(g)) for g in counts}
    words = [pair_word(g) for g in document_terms(counts, shares)]
    proposed = index.whole_files(words, POOL * limit)
    chosen = list(dict.fromkeys((path, version) for path, version, _ in proposed))[:RESCORED]
    if not chosen:
        return []
    texts = index.grams_of(path for path, _ in chosen)
    return rescored(words, texts, chosen, files.sample(index, chunks))


def rescored(
    words: Sequence[str],
    texts: Mapping[tuple[str, int], Sequence[str]],
    chosen: Sequence[tuple[str, int]],
    sample: FileSample,
) -> list[tuple[str, int, float]]:
    """The ``chosen`` files (path, version) scored by FTS5's BM25 for ``words`` (pair
    words, repeats counted) over their whole ``texts``, best first: a pair's count of
    files is the sample's estimate, or the chosen files' own when more of them hold it."""
    asked = set(words)
    found = {key: texts.get(key, ()) for key in chosen}
    in_found = Counter(w for text in found.values() for w in asked.intersection(text))
    total = max(sample.files, len(found))
    idf = {w: fts5_idf(total, max(sample.holding(w), in_found[w])) for w in asked}
    scored = [(key, bm25(words, idf, text, sample.mean)) for key, text in found.items()]
    ranked = sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0]))
    return [(path, version, score) for (path, version), score in ranked]
