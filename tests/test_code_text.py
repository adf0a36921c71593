"""Which passages read as code, whatever their file is called."""

from __future__ import annotations

import pytest

from micro_rag_mcp.text.code_text import reads_as_code

PYTHON = '''def paste(xsel=False):
    """Returns system clipboard contents.

    Uses xclip: the primary selection, or the clipboard.
    """
    selection = "primary" if xsel else "clipboard"
    try:
        return subprocess.Popen(["xclip", "-o"], stdout=PIPE).communicate()[0]
    except OSError as why:
        raise XclipNotFound
'''

C = """int main(int argc, char *argv[])
{
    int list[2];
    qsort(list, 2, sizeof(int), compare);
    return 0;
}
"""

JAVASCRIPT = """const total = items.reduce((a, b) => a + b, 0);
if (total > limit) {
  console.log(total);
}
"""

# Legal lists end their lines in ";" and wrapped prose starts lines with "for" or "if".
LEGAL = """(a) the Award is voluntary and occasional and does not create any right;
(b) the Plan may be amended, suspended or terminated by the Company at any time;
(c) all decisions with respect to future awards will be at the sole discretion of
the Company [§ 704(a)(7)];
"""

WRAPPED = """Revenue increased 12% for the three months ended March 31, driven by growth
for cloud services and an increase in the number of seats sold, offset in part
if foreign exchange rates move against us as described in Item 1A. Net income
was $16.7 billion, and diluted earnings per share was $2.23.
"""


# Lines of prose that open with a keyword of code.
KEYWORDS = """The fund invests in government securities that
yield a return of 4% a year, and it seeks to
return capital to shareholders each quarter. Firms
import raw materials from abroad, and taxes rise
from the import of steel.
"""

SPANISH = "El informe anual\ndel Banco Central muestra\nque la inflación\ndel año pasado\n"

LEAD_INS = """The Borrower shall, at its own cost:
(a) keep the premises insured;
(b) pay all taxes when due;
if the Lender so requests in writing:
(c) deliver the accounts within ninety days of the end of each year;
with respect to the collateral held by the agent:
(d) keep it free of any lien;
(e) notify the Lender of any claim;
"""


@pytest.mark.parametrize("text", [PYTHON, C, JAVASCRIPT])
def test_code_reads_as_code(text: str) -> None:
    assert reads_as_code(text)


@pytest.mark.parametrize(
    "text",
    [LEGAL, WRAPPED, KEYWORDS, SPANISH, LEAD_INS, "x = 1", "One line that says return.", ""],
)
def test_prose_lists_and_one_liners_do_not(text: str) -> None:
    assert not reads_as_code(text)


def test_a_function_is_judged_without_its_docstring() -> None:
    prose = "Some words of prose.\n" * 30
    documented = 'def area(r):\n    """' + prose + '    """\n    return r * r\n'
    assert reads_as_code(documented)
    # An unclosed docstring (a passage cut at its end) is left out to the end too.
    assert reads_as_code('def area(r):\n    y = r * r\n    """' + "Prose line.\n" * 30)


def test_a_passage_that_begins_inside_a_docstring_is_judged_by_the_code_after_it() -> None:
    assert reads_as_code('    of the arguments.\n    """\n    x = compute(a)\n    return x + 1\n')


def test_old_mac_line_endings_are_lines_too() -> None:
    assert reads_as_code("def f(x):\r    y = x * 2\r    return y\r")
