"""Whether a passage reads as source code, whatever its file is called.

Code saved as ``.txt`` (or pasted into a note) is judged by meaning like code in a
``.py`` file (see ``fusion.prose_share``; which files may hold such code is
``formats.may_read_as_code``). A passage reads as code when, its docstrings left out, at
least two of its first dozen lines are statements and such lines, with short ones that
end in ``;`` and hold a bracket or ``=``, or open with a closing bracket, are half of
them. A statement is a definition (``def f(``, ``class C:``), a brace, an assignment
(``x = …``, ``total += 1``), a call alone on its line, or a line that opens with a
keyword and goes on as code does: ``if``, ``for``, ``while``, ``with``, ``except`` end in
``:`` after a few words or a bracket; ``return``, ``yield`` and ``raise`` take one name or
an expression with brackets or operators; ``import`` and ``del`` take names only. Prose
wrapped into lines ("… to\\nreturn capital to shareholders", "la inflación\\ndel año")
and legal lists that end in ``;`` do not read as code (tests/test_code_text.py; the
share of each dev corpus that does is in docs/benchmarks.md).
"""

from __future__ import annotations

import re

_NAMES = r"[\w.\[\]'\"]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.\[\]'\"]+(?:\s+as\s+\w+)?)*"
_STATEMENT = re.compile(
    rf"""
    ^\s*(?:async\s+)?(?:def|class)\s+\w+\s*[(:]                           # a definition
    | ^\s*(?:else|try|finally|except)\s*:\s*$                             # a bare block
    | ^\s*(?:if|elif|for|while|with|except)\s+(?:\S+\s+){{0,3}}\S+:\s*$   # a short block
    | ^\s*(?:if|elif|for|while|with|except)\b.*[()\[\]=<>!].*:\s*$        # or with brackets
    | ^\s*(?:return|yield|raise)(?:\s*$|\s+[\w.]+\s*$|\s.*[()\[\]=+*/<>{{}}])  # a result
    | ^\s*(?:import\s+{_NAMES}|from\s+[\w.]+\s+import\s+(?:\(|\*|{_NAMES}))\s*;?\s*$
    | ^\s*del\s+{_NAMES}\s*$
    | \{{\s*$ | ^\s*\}}                                                   # braces
    | ^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])?(?:\s*,\s*[A-Za-z_][\w.]*)*       # an assignment
      \s*(?:[-+*/%|&^]|//)?=(?!=)\s*\S
    | ^\s*[A-Za-z_][\w.]*\(.*\)\s*;?\s*$                                  # a call alone
    """,
    re.X,
)
_CLOSING = re.compile(r"^\s*[\])]")
LINES_READ = 12  # a passage is judged by its first lines (a search judges dozens)
LONGEST_LINE = 200  # characters: a longer line is not read as a statement
SHORT_LINE_WORDS = 6  # a line ending in ";" counts with at most this many words
_DOCSTRING = re.compile(r'"""[\s\S]*?(?:"""|\Z)|\'\'\'[\s\S]*?(?:\'\'\'|\Z)')


def reads_as_code(text: str) -> bool:
    """Whether ``text`` reads as source code (see the module's docstring)."""
    if "\n" not in text and "\r" not in text:  # one line: prose, or too little to tell
        return False
    if '"""' not in text and "'''" not in text:
        return _judged(text)
    # A passage that begins inside a docstring holds its end first: judged both ways.
    readings = [text] + [text[text.index(q) + 3 :] for q in ('"""', "'''") if text.count(q) % 2]
    return any(_judged(_DOCSTRING.sub("", reading)) for reading in readings)


def _judged(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()][:LINES_READ]
    statements = punctuated = 0
    for n, line in enumerate(lines):
        left = len(lines) - n
        if statements + left < 2 or 2 * (statements + punctuated + left) < len(lines):
            return False  # too few lines left to make two statements, or half
        if len(line) > LONGEST_LINE:  # a paragraph on one line: prose
            continue
        if _STATEMENT.search(line):
            statements += 1
        elif _CLOSING.search(line) or _short_statement(line):
            punctuated += 1
    return statements >= 2 and 2 * (statements + punctuated) >= len(lines)


def _short_statement(line: str) -> bool:
    """A line that ends in ``;`` as a statement does (``int list[2];``), not a list item."""
    end = line.rstrip()
    return (
        end.endswith(";") and len(end.split()) <= SHORT_LINE_WORDS and any(c in end for c in "([=")
    )
