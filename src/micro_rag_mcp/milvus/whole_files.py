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
folder whose grams rows hold fewer pairs is sampled whole, and its scores are the
embedded store's exactly. LeCaRD dev, keyword channel: 0.6092 before, about 0.614 with a
sample of a fifth of its cases (taken once, in 11 to 20 s, and kept until the store's
chunks change by a 32nd), 0.6155 with exact counts, 0.6175 embedded (docs/benchmarks.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby

from micro_rag_mcp.milvus.cjk_words import gram_token, pair_word
from micro_rag_mcp.milvus.index import MilvusIndex
from micro_rag_mcp.milvus.keywords import (
    POOL,
    Kept,
    KeywordStats,
    counted_bm25,
    fts5_idf,
    outdated,
)
from micro_rag_mcp.milvus.rows import BUCKETS, MAX_TEXT_BYTES, FileRow
from micro_rag_mcp.search.documents import document_terms

SAMPLE_PAIRS = 8_000_000  # a sample takes files until they hold this many pairs
FIRST_FILES = 256  # about how many files the first range of buckets holds
ROW_PAIRS = MAX_TEXT_BYTES // 10  # about the most pairs a grams row holds (``gram_rows``)
RESCORED = 100  # files Milvus proposes that are scored again whole
SMALL_CHUNKS = 1024  # a sample of a store this small is taken again at any change


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
    def files(self) -> float:
        """About how many files of the collection have CJK text."""
        return self.sampled / self.share

    def holding(self, word: str) -> float:
        """About how many files of the collection hold a pair word."""
        return self.having[word] / self.share

    def outdated(self, chunks: int) -> bool:
        # Taken again once the store has changed by a 32nd, even when whole: new files
        # are counted among those read back, and a whole sample may take seconds to read.
        return outdated(self.chunks, chunks, whole=False, limit=SMALL_CHUNKS)


class FileStats(Kept[FileSample]):
    """The whole files' pair counts: files until they hold ``sample_pairs`` pairs, the
    first range of buckets about ``first_files`` of them."""

    def __init__(self, sample_pairs: int = SAMPLE_PAIRS, first_files: int = FIRST_FILES) -> None:
        super().__init__(lambda index, chunks: _taken(index, chunks, sample_pairs, first_files))


@dataclass
class _Tally:
    """What the sampled files hold, added up a request at a time."""

    sampled: int = 0
    length: int = 0
    having: Counter[str] = field(default_factory=Counter)

    def add(self, index: MilvusIndex, versions: Mapping[str, int]) -> None:
        """Count the files of ``versions`` (path -> the version to count, else the newest
        one with grams rows: a write under way has its chunks before its rows)."""
        for path, rows in groupby(index.pairs.grams_rows(versions), key=lambda r: r[0]):
            chosen: tuple[int, int, set[str]] | None = None  # version, length, words
            for _, version, words in rows:
                if chosen is None or _better(version, chosen[0], versions[path]):
                    chosen = (version, len(words), set(words))
                elif chosen[0] == version:
                    chosen = (version, chosen[1] + len(words), chosen[2] | set(words))
            if chosen is not None:
                self.sampled += 1
                self.length += chosen[1]
                self.having.update(chosen[2])

    def sample(self, chunks: int, share: float) -> FileSample:
        mean = self.length / self.sampled if self.sampled else 1.0
        return FileSample(chunks, share, self.sampled, self.having, max(mean, 1.0))


def _better(version: int, was: int, wanted: int) -> bool:
    """Whether a file's rows of ``version`` are counted rather than those of ``was``."""
    return version != was and was != wanted and (version == wanted or version > was)


def _taken(index: MilvusIndex, chunks: int, budget: int, first: int) -> FileSample:
    """Every file with CJK text when its rows hold at most ``budget`` pairs; else the
    files of a first range of buckets, then of as many more as the files seen say hold
    the rest of ``budget``, until they do or every file is taken: a folder of short files
    is sampled in more of them than one of books. ``first``: about how many files the
    first range holds."""
    budget, tally = max(budget, 1), _Tally()
    if index.pairs.count_grams() * ROW_PAIRS <= budget:  # every row read, none looked for
        current = index.file_rows(index.pairs.grams_paths())
        tally.add(index, {p: r.version for p, r in current.items() if r.record.status == "ok"})
        return tally.sample(chunks, 1.0)
    files = sum(index.count_files())
    step = BUCKETS if files <= first else max(1, BUCKETS * first // files)
    start = 0
    while start < BUCKETS and tally.length < budget:
        end = min(BUCKETS, start + step)
        tally.add(index, index.pairs.sample_heads(start, end))
        # the next range: as many buckets as the rest of the budget needs at the density
        # seen so far (twice as many if none held a pair yet), four times this one at most
        seen = tally.length
        step = min(-(-(budget - seen) * end // seen), 4 * (end - start)) if seen else 2 * step
        start = end
    return tally.sample(chunks, start / BUCKETS)


def whole_file_hits(
    index: MilvusIndex,
    stats: KeywordStats,
    files: FileStats,
    counts: Mapping[str, int],
    limit: int,
    chunks: int,
    known: dict[str, FileRow],
) -> list[tuple[str, int, float]]:
    """The files that best match a long CJK query's pairs (``counts``, see
    ``documents.document_terms``: their shares are the sampled passages'), by FTS5's BM25
    over each file's whole text: (path, version, score), best first, at most
    ``RESCORED`` of the current files among the ``POOL`` times ``limit`` rows Milvus's
    BM25 proposes. The file rows of the proposed paths are added to ``known`` (the
    search needs them too: read once)."""
    if not counts or chunks == 0:
        return []
    sample = stats.sample(index, chunks)
    shares = {g: sample.share(gram_token(g)) for g in counts}
    words = [pair_word(g) for g in document_terms(counts, shares)]
    proposed = index.whole_files(words, POOL * limit)
    known.update(index.file_rows({p for p, _, _ in proposed} - known.keys()))
    current = {p: r.version for p, r in known.items() if r.record.status == "ok"}
    chosen = [(p, v) for p, v, _ in proposed if current.get(p) == v]
    chosen = list(dict.fromkeys(chosen))[:RESCORED]
    if not chosen:
        return []
    asked, wanted = set(words), set(chosen)
    texts: dict[tuple[str, int], tuple[int, Counter[str]]] = {}
    for path, version, held in index.pairs.grams_rows(p for p, _ in chosen):
        if (path, version) in wanted:
            length, counted = texts.get((path, version), (0, Counter()))
            counted.update(w for w in held if w in asked)
            texts[(path, version)] = (length + len(held), counted)
    return rescored(words, texts, chosen, files.sample(index, chunks))


def rescored(
    words: Sequence[str],
    texts: Mapping[tuple[str, int], tuple[int, Mapping[str, int]]],
    chosen: Sequence[tuple[str, int]],
    sample: FileSample,
) -> list[tuple[str, int, float]]:
    """The ``chosen`` files (path, version) scored by FTS5's BM25 for ``words`` (pair
    words, repeats counted) over their whole text (``texts``: its length and how often it
    holds each word), best first: a pair's count of files is the sample's estimate, or
    the chosen files' own when more of them hold it."""
    asked = set(words)
    found = {key: texts.get(key, (0, {})) for key in chosen}
    in_found = Counter(w for _, held in found.values() for w in asked if held.get(w))
    total = max(sample.files, len(found))
    idf = {w: fts5_idf(total, max(sample.holding(w), in_found[w])) for w in asked}
    scored = [
        (key, counted_bm25(words, idf, held, length, sample.mean))
        for key, (length, held) in found.items()
    ]
    ranked = sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0]))
    return [(path, version, score) for (path, version), score in ranked]
