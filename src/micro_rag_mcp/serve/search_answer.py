"""A search's tool result as the client receives it, within a budget of characters.

The answer has two forms, and a host hands its model one of them: Claude Code passes only
the structured content (as JSON) when it is present (its issues 55677 and 79944), while
a client of a protocol revision before structured content, and others (Amazon Q, in
issue 59480 there), read only the text content. So each form carries the passages: the
structured content holds every field (the output schema's, validated by the TypeScript
SDK), and the text content is the same answer written for reading (a header per result
with its path, place, relevance, offsets and anchor, then the passage), not the JSON a
second time, which cost a third more for its keys and escapes.

Both forms together are kept within ``max_chars`` (a search's parameter): at its default
a ``top_k`` of 50 fits a 25,000-token tool-output limit even when a client counts both.
When the whole answer does not fit, snippets are cut (each to the same length, at a word,
never under ``MIN_SNIPPET_CHARS``), then results are left out from the end; ``cut`` and a
notice say what went and how to get it (``read`` the passage, raise ``max_chars``).
"""

from __future__ import annotations

import json

from mcp_types import CallToolResult

from micro_rag_mcp.serve.resources import with_links
from micro_rag_mcp.serve.tool_results import AnswerCut, SearchHit, SearchResult

DEFAULT_MAX_CHARS = 80_000  # ~20,000 tokens of English for both forms together
MIN_MAX_CHARS = 2_000
MAX_MAX_CHARS = 500_000
MIN_SNIPPET_CHARS = 200
ELLIPSIS = "…"


def search_answer(result: SearchResult, max_chars: int = DEFAULT_MAX_CHARS) -> CallToolResult:
    """``result`` as a tool result of at most ``max_chars`` characters (as far as cutting
    snippets and leaving out results can take it; the index block and notices stay)."""
    answer = _answer(result)
    if answer_chars(answer) <= max_chars:
        return answer
    longest = max((len(h.snippet) for h in result.results), default=0)
    kept = len(result.results)
    if _fits(result, kept, MIN_SNIPPET_CHARS, max_chars):
        low, high = MIN_SNIPPET_CHARS, longest  # low fits, high does not
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if _fits(result, kept, middle, max_chars) else (low, middle)
        return _answer(_cut(result, kept, low, max_chars))
    while kept > 0 and not _fits(result, kept, MIN_SNIPPET_CHARS, max_chars):
        kept -= 1
    return _answer(_cut(result, kept, MIN_SNIPPET_CHARS, max_chars))


def answer_chars(answer: CallToolResult) -> int:
    """Characters of a tool result: its text, its other blocks and its structured content
    as compact JSON (as they go on the wire, before JSON-RPC's own escapes)."""
    size = 0
    for block in answer.content:
        if block.type == "text":
            size += len(block.text)
        else:
            size += len(_compact(block.model_dump(mode="json", by_alias=True, exclude_none=True)))
    return size + len(_compact(answer.structured_content or {}))


def readable(result: SearchResult) -> str:
    """The text content: the answer written for reading."""
    parts = [_heading(result)]
    parts += [_hit_text(h) for h in result.results]
    if result.notices:
        parts.append("Notices:\n" + "\n".join(f"- {n}" for n in result.notices))
    parts.append(_index_line(result))
    return "\n\n".join(parts) + "\n"


def _answer(result: SearchResult) -> CallToolResult:
    return with_links(result, readable(result))


def _fits(result: SearchResult, kept: int, snippet_chars: int, max_chars: int) -> bool:
    return answer_chars(_answer(_cut(result, kept, snippet_chars, max_chars))) <= max_chars


def _cut(result: SearchResult, kept: int, snippet_chars: int, max_chars: int) -> SearchResult:
    hits = [_shortened(h, snippet_chars) for h in result.results[:kept]]
    cut_any = any(h.snippet_cut for h in hits)
    left_out = len(result.results) - kept
    cut = AnswerCut(
        max_chars=max_chars,
        snippet_chars=snippet_chars if cut_any else None,
        results_left_out=left_out,
    )
    return result.model_copy(
        update={"results": hits, "cut": cut, "notices": [*result.notices, _notice(cut)]}
    )


def _shortened(hit: SearchHit, chars: int) -> SearchHit:
    if len(hit.snippet) <= chars:
        return hit
    head = hit.snippet[: chars - len(ELLIPSIS)]
    at_word = max(head.rfind(" "), head.rfind("\n"))
    if at_word > chars // 2:
        head = head[:at_word]
    return hit.model_copy(update={"snippet": head.rstrip() + ELLIPSIS, "snippet_cut": True})


def _notice(cut: AnswerCut) -> str:
    done = []
    if cut.snippet_chars is not None:
        done.append(f"snippets cut to {cut.snippet_chars:,} characters (snippet_cut)")
    if cut.results_left_out:
        done.append(f"the last {cut.results_left_out} results left out")
    return (
        f"{' and '.join(done) or 'nothing cut'} to keep this answer within max_chars "
        f"{cut.max_chars:,}: call read with a result's path, char_start and char_end for its "
        "whole passage, or search again with a higher max_chars (or a lower top_k)"
    )


def _heading(result: SearchResult) -> str:
    count = len(result.results)
    if not count:
        return "No passages found."
    head = f"{count} passage{'s' if count > 1 else ''}, best first"
    if result.no_good_match:
        head += (
            "; no good match: none holds the query's rare words or is close in meaning, "
            "so the folder probably does not hold the answer"
        )
    return head + ". Cite the path with its page or lines; passages are document content."


def _hit_text(hit: SearchHit) -> str:
    place = [hit.path]
    if hit.page is not None:
        place.append(f"page {hit.page}")
    if hit.line_start is not None:
        place.append(f"lines {hit.line_start}-{hit.line_end}")
    place += [x for x in (hit.section, hit.locator) if x]
    cosine = "" if hit.score is None else f", cosine {hit.score:.2f}"
    found = "" if "vector" in hit.matched_by else ", by keyword"
    stale = " (stale: the file changed since)" if hit.stale else ""
    head = f"[{hit.rank}] {' · '.join(place)}  relevance {hit.relevance:.2f}{cosine}{found}{stale}"
    cut = ", snippet cut: read for the rest" if hit.snippet_cut else ""
    where = f"chars {hit.char_start}-{hit.char_end}{cut}; anchor {hit.anchor}"
    if hit.repeated is not None:
        more = hit.repeated.count - len(hit.repeated.places)
        others = "; ".join(hit.repeated.places) + (f"; and {more} more" if more > 0 else "")
        where += f"\nalso in {hit.repeated.count} other places: {others}"
    return f"{head}\n{where}\n{hit.snippet}"


def _index_line(result: SearchResult) -> str:
    i = result.index
    line = (
        f"Index: {i.files_indexed} files, {i.chunks_total} passages "
        f"({i.chunks_with_vectors} with vectors), model {i.model}, watch {i.watch}"
    )
    if i.files_failed:
        line += f", {i.files_failed} files failed"
    if i.indexing:
        line += f"; indexing ({i.phase or 'starting'} {i.done or 0}/{i.total or 0})"
    return line + "."


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
