"""Whether a passage reads as source code, whatever its file is called.

Code saved as ``.txt`` (or pasted into a note) is judged by meaning like code in a
``.py`` file (see ``fusion.prose_share``): a passage reads as code when, its docstrings
left out, at least two of its lines are statements (a definition, a block that ends in
``:``, ``return`` or ``import``, an assignment, a call alone on its line, a brace) and
such lines, with those that end in ``;`` or start with a closing bracket, are half of
its first dozen lines. Prose wrapped into lines does not: legal lists end in ``;`` but hold no
statement, and a line that begins with "for" or "if" must end in ``:`` to count. On
the dev data: 98 % of CoSQA's functions as ``.txt`` read as code; no passage of the
10-Q filings, realdocs or the licenses in ``/usr/share/common-licenses`` does
(docs/benchmarks.md).
"""

from __future__ import annotations

import re

_STATEMENT = re.compile(
    r"""
    ^\s*(?:async\s+)?(?:def|class)\s+\w+\s*[(:]                         # a definition
    | ^\s*(?:if|elif|else|for|while|with|try|except|finally)\b.*:\s*$   # a block
    | ^\s*(?:return|raise|yield|import|del|from\s+[\w.]+\s+import)\b    # a statement
    | \{\s*$ | ^\s*\}                                                   # braces
    | ^\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])?(?:\s*,\s*[A-Za-z_][\w.]*)*     # an assignment
      \s*(?:[-+*/%|&^]|//)?=(?!=)\s*\S
    | ^\s*[A-Za-z_][\w.]*\(.*\)\s*;?\s*$                                # a call alone
    """,
    re.X,
)
LINES_READ = 12  # a passage is judged by its first lines (a search judges hundreds)
LONGEST_LINE = 200  # characters: a longer line is not read as a statement

_PUNCTUATED = re.compile(r";\s*$|^\s*[\])]")
_DOCSTRING = re.compile(r'"""[\s\S]*?(?:"""|\Z)|\'\'\'[\s\S]*?(?:\'\'\'|\Z)')


def reads_as_code(text: str) -> bool:
    """Whether ``text`` reads as source code (see the module's docstring)."""
    if text.count("\n") < 1:  # one line: prose, or too little code to tell
        return False
    if '"""' in text or "'''" in text:
        text = _DOCSTRING.sub("", text)
    lines = [line for line in text.splitlines() if line.strip()]
    lines = lines[:LINES_READ]
    statements = punctuated = 0
    for n, line in enumerate(lines):
        left = len(lines) - n
        if statements + left < 2 or 2 * (statements + punctuated + left) < len(lines):
            return False  # too few lines left to make two statements, or half
        if len(line) > LONGEST_LINE:  # a paragraph on one line: prose
            continue
        if _STATEMENT.search(line):
            statements += 1
        elif _PUNCTUATED.search(line):
            punctuated += 1
    return statements >= 2 and 2 * (statements + punctuated) >= len(lines)
