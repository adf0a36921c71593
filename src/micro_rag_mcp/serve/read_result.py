"""The ``read`` tool's result as a client receives it (the command line's ``read --json``
prints the same)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from micro_rag_mcp.core.results import TextPassage
from micro_rag_mcp.serve.tool_results import LineEnd, LineStart


class ReadResult(BaseModel):
    path: str = Field(description="File path relative to the data folder, '/' separators.")
    text: str = Field(description="The file's extracted text from char_start to char_end.")
    char_start: int = Field(description="Offset of the text in the file's extracted text.")
    char_end: int = Field(description="End offset (exclusive) of the text.")
    next_char_start: int | None = Field(
        description="Where to continue (pass it as char_start); null when the range asked "
        "for (the file, or the page) has been returned to its end."
    )
    total_chars: int = Field(description="Length of the file's extracted text.")
    page: int | None = Field(None, description="Page (1-based) where the text starts, PDF only.")
    line_start: LineStart = None
    line_end: LineEnd = None
    ext: str = Field(description="File extension, lower case, with the dot.")
    mtime: float = Field(description="File modification time when indexed, seconds since epoch.")
    notices: list[str] = Field(
        description="What the text alone does not say: whitespace the index does not keep, "
        "or a file that changed since it was indexed."
    )
    changed: bool | None = Field(
        None,
        description="Read by anchor: true when the passage was edited since the anchor was "
        "made (the text is the closest passage); null when not read by anchor.",
    )
    similarity: float | None = Field(
        None,
        description="Read by anchor: the share of the anchor's twelve sample phrases found "
        "in place (1 when the edit missed them all; changed tells whether every word is the "
        "same); null when not read by anchor.",
    )


def read_result(passage: TextPassage) -> ReadResult:
    return ReadResult(
        path=passage.path,
        text=passage.text,
        char_start=passage.char_start,
        char_end=passage.char_end,
        next_char_start=passage.next_char_start,
        total_chars=passage.total_chars,
        page=passage.page,
        line_start=passage.line_start,
        line_end=passage.line_end,
        ext=passage.ext,
        mtime=passage.mtime_ns / 1e9,
        notices=passage.notices,
        changed=passage.changed,
        similarity=passage.similarity,
    )
