"""What micro-rag draws: a live bar on a terminal, plain lines elsewhere, marked query words."""

from __future__ import annotations

import io
import shlex

import pytest
from rich.console import Console

from micro_rag_mcp.cli.output import IndexDisplay, Screens, highlighted, query_terms, snippet
from micro_rag_mcp.core.results import IndexSummary, Progress, TextPassage
from micro_rag_mcp.serve.tool_results import ReindexResult


def feed(display: IndexDisplay) -> None:
    for done in range(1, 4):
        display(Progress("reading", done, 3, f"f{done}.txt"))
    for done in (16, 20):
        display(Progress("embedding", done, 20))
    display.close()


def test_on_a_terminal_a_bar_per_phase_with_counts() -> None:
    screen = io.StringIO()
    feed(IndexDisplay(Console(file=screen, force_terminal=True, width=100)))
    drawn = screen.getvalue()
    assert "reading files" in drawn and "3/3" in drawn
    assert "embedding chunks" in drawn and "20/20" in drawn
    assert "\x1b[" in drawn  # a live display, drawn with escape codes


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_on_a_terminal_a_slow_file_is_named_in_place_of_rate_and_time_left() -> None:
    clock, screen = Clock(), io.StringIO()
    display = IndexDisplay(Console(file=screen, force_terminal=True, width=120), clock)
    for done in range(1, 4):
        clock.now += 1
        display(Progress("reading", done, 10, f"f{done}.txt"))
    display(Progress("reading", 3, 10, reading="scans/big.pdf"))
    clock.now += 40
    display(Progress("reading", 3, 10, reading="scans/big.pdf"))
    display.close()
    last = screen.getvalue().rsplit("reading files", 1)[1]  # the bar as it was left
    assert "3/10" in last and "reading scans/big.pdf (40 s)" in last
    assert "/s" not in last and "left" not in last


def test_elsewhere_plain_lines_without_escape_codes() -> None:
    screen = io.StringIO()
    feed(IndexDisplay(Console(file=screen, force_terminal=False, width=100)))
    assert screen.getvalue().splitlines() == [
        "reading files: 3 to do",
        "embedding chunks: 20 to do",
        "embedding chunks: 20 of 20; 3 files read",
    ]


def test_query_words_are_marked_whatever_their_case_and_ending() -> None:
    terms = query_terms("Knead the DOUGH a")
    assert terms == ["dough", "knead"]  # no stop words, no single letters
    text = highlighted("Knead the bread doughs, then knead again.", terms)
    marked = [text.plain[s.start : s.end] for s in text.spans]
    assert sorted(marked) == ["Knead", "doughs", "knead"]


def test_a_long_passage_is_cut_around_the_first_query_word() -> None:
    passage = "filler words here. " * 40 + "The Hindenburg burned at Lakehurst." + " more" * 80
    cut = snippet(passage, ["hindenburg"], width=120)
    assert cut.startswith("…") and cut.endswith("…") and "The Hindenburg burned" in cut
    assert len(cut) == 122


def test_the_more_hint_is_a_command_a_shell_runs_as_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = io.StringIO()
    passage = TextPassage(
        path="sec/2023 Q1 INTC.pdf", ext=".pdf", mtime_ns=0, text="Revenue rose.",
        char_start=0, char_end=13, next_char_start=2787, total_chars=9000, page=None,
        line_start=None, line_end=None,
    )  # fmt: skip
    Screens(err=Console(file=err, width=200)).passage(passage, "my docs")
    more = next(line for line in err.getvalue().splitlines() if line.startswith("more: "))
    words = shlex.split(more.removeprefix("more: "))
    assert words == ["micro-rag", "read", "my docs", "sec/2023 Q1 INTC.pdf", "--start", "2787"]
    assert capsys.readouterr().out == "Revenue rose.\n"


def test_a_narrow_status_table_wraps_the_model_between_its_parts() -> None:
    screen = io.StringIO()
    model = "sentence-transformers/all-MiniLM-L6-v2@53aa51172d14;title+text"
    summary = IndexSummary("/i", 1, 0, [], 1, 1, model, "chars:1000/200;titles:2", 1, 0.0, None)
    Screens(Console(file=screen, width=80)).status(summary, "installed")
    lines = [line.strip() for line in screen.getvalue().splitlines()]
    assert "title+text (installed)" in lines  # the recipe on a line of its own, whole
    assert any(line.endswith("all-MiniLM-L6-v2@53aa51172d14;") for line in lines)


def test_the_index_summary_says_identical_texts_share_a_vector() -> None:
    out = io.StringIO()
    screens = Screens(Console(file=out, width=100), Console(file=io.StringIO(), width=100))
    result = ReindexResult(
        files_added=0,
        files_updated=0,
        files_removed=0,
        files_unchanged=0,
        files_failed=[],
        chunks_total=1800,
        chunks_embedded=849,
        elapsed_ms=5,
        notices=[],
        running=False,
        joined=False,
    )
    screens.report(result, "ready")
    summary = " ".join(out.getvalue().split())
    assert "1800 chunks in the index, 849 embedded now" in summary
    assert "chunks of identical text share one vector" in summary
