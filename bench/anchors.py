"""Anchors under edits: found again after edits elsewhere, reported gone once deleted.

    .venv/bin/python bench/anchors.py --sec10q /path/sec10q_dev --handbook /path/handbook.docx \
        --work <work>/anchors-work [--hits 200] [--seed 1]

Hits are the keyword channel's top results (``search.hybrid_search``, the code the tool
runs) for the sec10q questions and, in the handbook, for phrases of random passages:
half the hits from each. Each hit's anchor is made as the tool makes it. Then, in every
file that holds a hit, paragraphs are inserted and deleted at random places above and
below the hits (never inside one), the index is brought up to date (``sync_files``, the
catalog side of a reindex; vectors play no part in anchors) and every anchor is read
back: it counts as found when ``read`` returns exactly the passage's text, unchanged.
Then three words in the middle of each filing's passage are replaced, and the anchor
counts when ``read`` returns the edited passage, marked changed. Last, every hit
passage is deleted from its file, the index updated again, and every
anchor read back: it counts as reported gone when ``read`` says the passage is no longer
there (a passage whose words still occur elsewhere in the file is left out of that
count, and counted).

The 10-Q filings are PDFs, which cannot be edited in place: their text, as our PDF
reader extracts it, is written once to ``.txt`` files in the work folder and indexed
there. The handbook is edited as a DOCX (python-docx: paragraphs inserted and removed).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from micro_rag_mcp.core.errors import PassageGone  # noqa: E402
from micro_rag_mcp.core.settings import Settings  # noqa: E402
from micro_rag_mcp.ingest.readers import read_document  # noqa: E402
from micro_rag_mcp.local.answers.search import hybrid_search
from micro_rag_mcp.local.catalog import Catalog  # noqa: E402
from micro_rag_mcp.local.layout import IndexPaths  # noqa: E402
from micro_rag_mcp.local.passes.indexer import sync_files  # noqa: E402
from micro_rag_mcp.search.fusion import SearchParams
from micro_rag_mcp.search.reading import MAX_CHARS, read_indexed, with_context  # noqa: E402
from micro_rag_mcp.text.anchors import make_anchor  # noqa: E402

KEYWORD = SearchParams(channels=("keyword",))
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Cited:
    path: str
    text: str
    start: int
    end: int
    anchor: str


def prepare(sec10q: Path, handbook: Path, folder: Path) -> None:
    """The work folder's documents: the filings' text as .txt, the handbook as it is."""
    folder.mkdir(parents=True, exist_ok=True)
    for pdf in sorted((sec10q / "pdf").glob("*.pdf")):
        target = folder / (pdf.stem.replace(" ", "_") + ".txt")
        if not target.exists():
            text = read_document(pdf, max_bytes=1 << 30).text
            target.write_text(text, encoding="utf-8")
    shutil.copyfile(handbook, folder / "handbook.docx")


def index(catalog: Catalog, settings: Settings) -> None:
    sync_files(catalog, settings)


def hits(catalog: Catalog, queries: list[str], wanted: int, only: str | None) -> list[Cited]:
    found: dict[tuple[str, int], Cited] = {}
    for query in queries:
        ranked = hybrid_search(
            catalog, None, query, None, top_k=10, score_threshold=0.0, params=KEYWORD
        )
        for h in with_context(catalog, ranked):  # as the engine hands hits to the tool
            c = h.chunk
            if (only is not None and c.path != only) or len(_WORD.findall(c.text)) < 12:
                continue
            anchor = make_anchor(c.text, c.char_start, *h.context)
            found.setdefault(
                (c.path, c.chunk_index), Cited(c.path, c.text, c.char_start, c.char_end, anchor)
            )
            if len(found) >= wanted:
                return list(found.values())
    return list(found.values())


def phrase_queries(catalog: Catalog, paths: list[str], rng: random.Random, n: int) -> list[str]:
    """Six-word phrases of random passages of ``paths``: queries whose hits are spread out."""
    rows = [c for p in paths for c in catalog.file_chunks(p, 0, 1 << 40)]
    queries = []
    for chunk in rng.sample(rows, min(n, len(rows))):
        words = _WORD.findall(chunk.text)
        if len(words) >= 12:
            at = rng.randrange(len(words) - 6)
            queries.append(" ".join(words[at : at + 6]))
    return queries


def filler(rng: random.Random, vocabulary: list[str]) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(15, 60))).capitalize() + "."


def edit_text(
    path: Path, protected: list[tuple[int, int]], rng: random.Random, remove: bool
) -> None:
    """Insert and delete lines of a .txt outside ``protected`` (or delete the protected)."""
    text = path.read_text(encoding="utf-8")
    if remove:
        for start, end in sorted(protected, reverse=True):
            text = text[:start] + text[end:]
        path.write_text(text, encoding="utf-8")
        return
    lines = text.split("\n")
    offsets, at = [], 0
    for line in lines:
        offsets.append((at, at + len(line)))
        at += len(line) + 1
    free = [
        i
        for i, (a, b) in enumerate(offsets)
        if not any(a < pe and ps < b + 1 for ps, pe in protected)
    ]
    vocabulary = _WORD.findall(text[:200_000]) or ["word"]
    dropped = set(rng.sample(free, min(len(free) // 10, 40)))
    inserts = {i: filler(rng, vocabulary) for i in rng.sample(free, min(len(free) // 10, 40))}
    out: list[str] = []
    for i, line in enumerate(lines):
        if i in inserts:
            out.extend([inserts[i], ""])
        if i not in dropped:
            out.append(line)
    path.write_text("\n".join(out), encoding="utf-8")


def edit_docx(path: Path, cited: list[Cited], rng: random.Random, remove: bool) -> None:
    """Insert and delete paragraphs outside the cited passages (or delete the passages)."""
    import docx

    document = docx.Document(str(path))
    paragraphs = document.paragraphs
    cores = [" ".join(_WORD.findall(c.text)) for c in cited]
    edges = [(" ".join(w[:6]), " ".join(w[-6:])) for w in (_WORD.findall(c.text) for c in cited)]

    def holds_cited(p: object) -> bool:
        words = _WORD.findall(p.text)  # type: ignore[attr-defined]
        if not words:
            return False
        whole, head, tail = " ".join(words), " ".join(words[:6]), " ".join(words[-6:])
        return any(whole in core or head in core or tail in core for core in cores) or any(
            first in whole or last in whole for first, last in edges
        )

    if remove:
        for c in cited:
            _remove_passage(paragraphs, c)
    else:
        free = [p for p in paragraphs if p.text.strip() and not holds_cited(p)]
        vocabulary = _WORD.findall(" ".join(p.text for p in free[:2000])) or ["word"]
        for p in rng.sample(free, min(len(free) // 20, 200)):
            p.insert_paragraph_before(filler(rng, vocabulary))
        for p in rng.sample(free, min(len(free) // 20, 200)):
            p._element.getparent().remove(p._element)
    document.save(str(path))


def _remove_passage(paragraphs: list[object], c: Cited) -> None:
    """Cut the passage out: the paragraphs that lie inside it, and from the paragraphs it
    starts, ends or lies in, the part that is its text."""
    core = " ".join(_WORD.findall(c.text))
    text = c.text.strip()
    for p in paragraphs:
        words = " ".join(_WORD.findall(p.text))  # type: ignore[attr-defined]
        parent = p._element.getparent()  # type: ignore[attr-defined]
        if parent is None or not words:  # removed already, for an overlapping passage
            continue
        own: str = p.text  # type: ignore[attr-defined]
        if words in core:
            parent.remove(p._element)  # type: ignore[attr-defined]
        elif text in own:
            p.text = own.replace(text, "")  # type: ignore[attr-defined]
        else:
            at = own.find(text[:40])  # the passage starts in this paragraph
            if at >= 0 and text.startswith(own[at:].rstrip()):
                own = own[:at]
            end = own.find(text[-40:])  # the passage ends in it
            if end >= 0 and text.endswith(own[: end + 40].lstrip()):
                own = own[end + 40 :]
            if own != p.text:  # type: ignore[attr-defined]
                p.text = own  # type: ignore[attr-defined]


def resolve(catalog: Catalog, folder: Path, c: Cited) -> tuple[str, object]:
    try:
        passage = read_indexed(catalog, folder, c.path, anchor=c.anchor, max_chars=MAX_CHARS)
    except PassageGone:
        return "gone", None
    return ("found" if not passage.changed else "changed"), passage


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sec10q", type=Path, required=True, help="The sec10q_dev folder.")
    ap.add_argument("--handbook", type=Path, required=True, help="The handbook DOCX.")
    ap.add_argument("--work", type=Path, required=True, help="Work folder (kept: the text cache).")
    ap.add_argument("--hits", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cache = args.work / "cache"
    prepare(args.sec10q, args.handbook, cache)
    folder = args.work / "docs"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(cache, folder)
    settings = Settings(
        data_folder=folder, index_folder=args.work / "index", exts=(".txt", ".docx")
    )
    shutil.rmtree(settings.index_folder, ignore_errors=True)
    settings.index_folder.mkdir(parents=True)
    catalog = Catalog.open(IndexPaths(settings.index_folder).catalog)
    t0 = time.monotonic()
    index(catalog, settings)
    questions = [json.loads(line)["question"] for line in (args.sec10q / "questions.jsonl").open()]
    half = args.hits // 2
    filings = sorted(p for p in catalog.files() if p.endswith(".txt"))
    queries = questions + phrase_queries(catalog, filings, rng, 4 * half)
    cited = [c for c in hits(catalog, queries, 2 * half, None) if c.path != "handbook.docx"][:half]
    queries = phrase_queries(catalog, ["handbook.docx"], rng, 4 * half)
    cited += hits(catalog, queries, args.hits - len(cited), "handbook.docx")
    by_file: dict[str, list[Cited]] = {}
    for c in cited:
        by_file.setdefault(c.path, []).append(c)
    print(f"{len(cited)} hits in {len(by_file)} files ({time.monotonic() - t0:.0f} s to index)")

    for rel, group in by_file.items():
        if rel.endswith(".docx"):
            edit_docx(folder / rel, group, rng, remove=False)
        else:
            edit_text(folder / rel, [(c.start, c.end) for c in group], rng, remove=False)
    index(catalog, settings)
    outcomes = {"found": 0, "changed": 0, "gone": 0, "moved": 0}
    wrong: list[str] = []
    for c in cited:
        kind, passage = resolve(catalog, folder, c)
        if kind == "found" and passage.text == c.text:  # type: ignore[attr-defined]
            outcomes["found"] += 1
            outcomes["moved"] += passage.char_start != c.start  # type: ignore[attr-defined]
        else:
            outcomes[kind if kind != "found" else "changed"] += 1
            wrong.append(f"{kind}: {c.path} @{c.start}: {c.text[:60]!r}")
    print(
        f"after edits elsewhere: {outcomes['found']}/{len(cited)} found exactly "
        f"({outcomes['found'] / len(cited):.1%}; {outcomes['moved']} at new offsets), "
        f"{outcomes['changed']} as changed, {outcomes['gone']} gone"
    )
    for line in wrong[:10]:
        print("  ", line)
    now_reads = edited_inside(catalog, settings, folder, cited, rng)

    for rel, group in by_file.items():
        if rel.endswith(".docx"):
            edit_docx(folder / rel, group, rng, remove=True)
        else:
            text = (folder / rel).read_text(encoding="utf-8")
            spans = []
            for c in group:
                passage = now_reads.get(c.anchor, c.text)
                at = text.find(passage)
                if at >= 0:
                    spans.append((at, at + len(passage)))
            edit_text(folder / rel, _merged(spans), rng, remove=True)
    index(catalog, settings)
    gone = still = 0
    missed: list[str] = []
    texts: dict[str, str] = {}
    for c in cited:
        if c.path not in texts:
            texts[c.path] = " ".join(_WORD.findall(_whole(catalog, folder, c.path))).casefold()
        now = texts[c.path]
        if " ".join(_WORD.findall(now_reads.get(c.anchor, c.text))[1:-1]).casefold() in now:
            still += 1
            continue
        kind, passage = resolve(catalog, folder, c)
        gone += kind == "gone"
        if kind != "gone":
            now_text = passage.text[:150] if passage is not None else ""  # type: ignore[attr-defined]
            missed.append(f"{kind}: {c.path} @{c.start}: {c.text[:150]!r}\n     now {now_text!r}")
    judged = len(cited) - still
    print(
        f"after deleting the passages: {gone}/{judged} reported gone "
        f"({gone / max(judged, 1):.1%}); "
        f"{still} left out (their words are still in the file)"
    )
    for line in missed[:10]:
        print("  ", line)
    catalog.close()
    return 0


def edited_inside(
    catalog: Catalog, settings: Settings, folder: Path, cited: list[Cited], rng: random.Random
) -> dict[str, str]:
    """Replace three words in the middle of each filing's passage (the handbook is left as
    it is), update the index, and count the anchors read back as changed, in place.
    Returns each edited passage's new text, by its anchor."""
    edited: list[Cited] = []
    now: dict[str, str] = {}
    for c in cited:
        if c.path.endswith(".docx"):
            continue
        path = folder / c.path
        text = path.read_text(encoding="utf-8")
        at = text.find(c.text)
        words = list(_WORD.finditer(c.text))
        if at < 0 or len(words) < 30 or text.count(c.text) != 1:
            continue
        middle = words[len(words) // 2 : len(words) // 2 + 3]
        a, b = at + middle[0].start(), at + middle[-1].end()
        new = f"revised wording {rng.randrange(10**6)}"
        path.write_text(text[:a] + new + text[b:], "utf-8")
        now[c.anchor] = c.text[: a - at] + new + c.text[b - at :]
        edited.append(c)
    index(catalog, settings)
    changed = 0
    shares: list[float] = []
    for c in edited:
        kind, passage = resolve(catalog, folder, c)
        if kind == "changed" and "revised wording" in passage.text:  # type: ignore[attr-defined]
            changed += 1
            shares.append(passage.similarity)  # type: ignore[attr-defined]
    low = min(shares) if shares else 0.0
    print(
        f"after an edit inside the passage (filings): {changed}/{len(edited)} found as changed, "
        f"at the edit ({changed / max(len(edited), 1):.1%}); similarity from {low:.2f}"
    )
    return now


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _whole(catalog: Catalog, folder: Path, rel: str) -> str:
    record = catalog.file_record(rel)
    if record is None or record.status != "ok":
        return ""
    total, _ = catalog.file_extent(rel)
    parts, at = [], 0
    while at < total:
        p = read_indexed(catalog, folder, rel, char_start=at, max_chars=MAX_CHARS)
        parts.append(p.text)
        at = p.char_end
    return "".join(parts)


if __name__ == "__main__":
    sys.exit(main())
