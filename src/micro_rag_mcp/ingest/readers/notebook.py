"""Jupyter notebooks (``.ipynb``, read as JSON).

Markdown and code cells in order, each followed by its text outputs; a passage names
the cell it starts in, and Markdown headings give the sections. Images and other
binary outputs (base64) are never read into the text; a long output is cut.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from micro_rag_mcp.core.errors import ReadError
from micro_rag_mcp.ingest.readers.document import (
    Document,
    DocumentBuilder,
    HeadingPath,
    clean_title,
)
from micro_rag_mcp.ingest.readers.text import decode_text_bytes, markdown_sections

logger = logging.getLogger(__name__)

MAX_OUTPUT_CHARS = 5000  # of one output's text
_TEXT_OUTPUTS = ("text/plain", "text/markdown")


def read_ipynb(path: Path) -> Document:
    """Cells as blocks with ``cell N`` locators (N counts every cell from 1)."""
    try:
        notebook = json.loads(decode_text_bytes(path.read_bytes()))
    except json.JSONDecodeError as e:
        raise ReadError(f"not a valid notebook (bad JSON: {e})") from e
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ReadError("not a valid notebook (no list of cells)")
    builder = DocumentBuilder()
    headings = HeadingPath()
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            continue
        source = _text(cell.get("source"))
        builder.locator(f"cell {number}")
        if cell.get("cell_type") == "markdown":
            builder.add(source, sections=markdown_sections(source, headings))
        elif cell.get("cell_type") == "code":
            builder.add(source)
            for output in _outputs(cell.get("outputs")):
                builder.add(output, sep="\n\n")
    metadata = notebook.get("metadata")
    title = metadata.get("title") if isinstance(metadata, dict) else None
    return builder.build(clean_title(title))


def _outputs(outputs: object) -> list[str]:
    """The text of a code cell's outputs: streams, text results, errors; never images."""
    texts: list[str] = []
    for output in outputs if isinstance(outputs, list) else ():
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            text = _text(output.get("text"))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data")
            data = data if isinstance(data, dict) else {}
            text = next((_text(data[m]) for m in _TEXT_OUTPUTS if m in data), "")
        elif kind == "error":
            text = f"{_text(output.get('ename'))}: {_text(output.get('evalue'))}"
        else:
            continue
        if len(text) > MAX_OUTPUT_CHARS:
            text = text[:MAX_OUTPUT_CHARS] + " …"
        texts.append(text)
    return texts


def _text(value: Any) -> str:
    """Notebook text: a string, or a list of lines to join."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(part for part in value if isinstance(part, str))
    return ""
