"""Source code: text cited by lines, with the enclosing definition as the section.

No parser: a definition is a line that starts with one of the keywords most languages
open a function, class or type with (``def``, ``class``, ``func``, ``fn``,
``function``, ``struct``, ``impl``, ``CREATE TABLE`` …), after the modifiers that may
precede them (``export``, ``pub``, ``async``, ``public static`` …). A definition at the
left margin opens a section (``class Catalog``); one indented under a class-like
definition nests in it (``class Catalog › def fetch``). Languages whose functions start
with a type (C, Java methods) get their classes, structs and types only; the lines are
always exact.
"""

from __future__ import annotations

import re
from pathlib import Path

from micro_rag_mcp.ingest.readers.document import Document, Marks
from micro_rag_mcp.ingest.readers.text import read_text

_MODIFIERS = (
    r"(?:(?:export|default|pub(?:\([\w:]+\))?|async|public|private|protected|internal|"
    r"static|final|abstract|sealed|partial|unsafe|extern|inline|override|virtual)\s+)*"
)
_KEYWORDS = (
    r"def|class|function\*?|func|fn|struct|enum|trait|impl|interface|module|namespace|"
    r"record|object|type|procedure"
)
_DEFINITION = re.compile(
    rf"(?P<indent>[ \t]*){_MODIFIERS}(?P<kind>{_KEYWORDS})\s+(?P<name>[\w$.:<>]+)"
)
_SQL = re.compile(
    r"(?P<indent>)create\s+(?:or\s+replace\s+)?(?P<kind>table|view|function|procedure|"
    r"trigger|index)\s+(?:if\s+not\s+exists\s+)?(?P<name>[\w.\"`\[\]]+)",
    re.IGNORECASE,
)
_CONTAINERS = frozenset({"class", "struct", "impl", "trait", "interface", "module", "object"})


def read_code(path: Path) -> Document:
    """A source file as text, with each definition's start as a section."""
    text = read_text(path).text
    return Document(text, sections=code_sections(text))


def code_sections(text: str) -> Marks:
    """Where each definition starts, labelled ``kind name`` (nested one level in a class)."""
    marks: list[tuple[int, str]] = []
    container = ""  # the left-margin class-like definition the next lines belong to
    offset = 0
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        found = _DEFINITION.match(line) or _SQL.match(line)
        if found is None:
            if line[:1].strip():  # other code at the margin closes the container
                container = ""
            continue
        label = f"{found['kind']} {found['name'].rstrip(':(')}"
        if not found["indent"]:
            container = label if found["kind"].lower() in _CONTAINERS else ""
            marks.append((start, label))
        elif container:
            marks.append((start, f"{container} › {label}"))
    return tuple(marks)
