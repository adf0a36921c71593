"""What ``micro-rag`` prints: a progress bar or plain lines, tables, highlighted passages.

Results go to stdout, progress and notes to stderr. On a terminal, rich draws a live bar
and colours; in a file or a pipe the same facts come as plain lines. Document text is
printed as it is, never read as markup.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    Task,
    TextColumn,
)
from rich.progress import Progress as Bar
from rich.table import Table
from rich.text import Text

from micro_rag_mcp.core.pace import Pace, ProgressLog, duration
from micro_rag_mcp.core.records import SkipGroup
from micro_rag_mcp.core.results import IndexSummary, Progress, TextPassage
from micro_rag_mcp.search.terms import STOPWORDS
from micro_rag_mcp.serve.tool_results import ReindexResult, SearchResult

PLAIN_EVERY_S = 5.0  # a plain progress line at most this often
SNIPPET_CHARS = 320
_PHASES = {"reading": "reading files", "embedding": "embedding chunks"}


class _Pace(ProgressColumn):
    """The rate and the time left; while a file is slow to read, its name instead (the
    rate and time left then mean nothing: ``core.pace``)."""

    def __init__(self, pace: Pace) -> None:
        super().__init__()
        self._pace = pace

    def render(self, task: Task) -> Text:
        slow = self._pace.slow_read()
        if slow is not None and task.description == _PHASES["reading"] and not task.finished:
            return Text(f"reading {slow[0]} ({duration(slow[1])})", style="progress.description")
        speed = task.finished_speed or task.speed
        if not speed:
            return Text("")
        left = task.time_remaining
        words = f"{speed:.3g}/s" + (f", about {duration(left)} left" if left else "")
        return Text(words, style="progress.data.speed")


class _ConsoleHandler(logging.Handler):
    """Log records printed through a rich console, so a live display stays whole."""

    def __init__(self, console: Console) -> None:
        super().__init__()
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        _say(self.console, self.format(record))


class IndexDisplay:
    """The progress of an ``index`` run: a live bar on a terminal, else plain lines."""

    def __init__(self, err: Console, clock: Callable[[], float] = time.monotonic) -> None:
        self._err = err
        self._tasks: dict[str, Any] = {}
        self._phase: str | None = None
        self._waited = False
        self._said = ""
        self._bar: Bar | None = None
        self._handlers: list[logging.Handler] = []
        self._log = ProgressLog(self._plain, PLAIN_EVERY_S, clock)
        if err.is_terminal:
            self._bar = Bar(
                TextColumn("{task.description:<17}"),
                BarColumn(),
                MofNCompleteColumn(),
                _Pace(self._log.pace),
                console=err,
                get_time=clock,
            )
            self._bar.start()
            # Log lines (a file that cannot be read) go above the bar, not through it.
            self._handlers = logging.getLogger().handlers[:]
            handler = _ConsoleHandler(err)
            handler.setFormatter(self._handlers[0].formatter if self._handlers else None)
            logging.getLogger().handlers[:] = [handler]

    def __call__(self, p: Progress) -> None:
        if self._bar is not None:
            self._log.pace.update(p)
            if p.phase not in self._tasks:
                self._tasks[p.phase] = self._bar.add_task(
                    _PHASES.get(p.phase, p.phase), total=p.total
                )
            self._bar.update(self._tasks[p.phase], completed=p.done, total=p.total)
            return
        if p.phase != self._phase:
            self._phase = p.phase
            self._plain(f"{_PHASES.get(p.phase, p.phase)}: {p.total} to do")
        self._log(p)

    def waiting(self, holder: str) -> None:
        if not self._waited:
            self._waited = True
            _say(self._err, f"waiting: {holder.split('; try again')[0]}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            logging.getLogger().handlers[:] = self._handlers
        elif self._phase is not None and self._log.pace.line() != self._said:
            self._plain(self._log.pace.line())

    def _plain(self, line: str) -> None:
        self._said = line
        _say(self._err, line)


class Screens:
    """Where and how each command's answer is printed."""

    def __init__(self, out: Console | None = None, err: Console | None = None) -> None:
        self.out = out or Console(highlight=False)
        self.err = err or Console(stderr=True, highlight=False)

    def index_display(self) -> IndexDisplay:
        return IndexDisplay(self.err)

    def json(self, value: Any) -> None:
        sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")

    # -- index ---------------------------------------------------------------------

    def report(self, result: ReindexResult, model: str) -> None:
        counts = Table(show_header=True, header_style="bold", box=None)
        counts.add_column("files")
        counts.add_column("", justify="right")
        for name in ("added", "updated", "removed", "unchanged"):
            counts.add_row(name, str(getattr(result, f"files_{name}")))
        failed_files = result.files_failed or []  # a list once the pass has ended
        counts.add_row("failed", str(len(failed_files)), style="red" if failed_files else None)
        self.out.print(counts)
        if failed_files:
            failed = Table(show_header=True, header_style="bold", box=None)
            failed.add_column("failed file", overflow="fold")
            failed.add_column("reason", overflow="fold")
            for f in failed_files:
                failed.add_row(Text(f.path), Text(f.reason))
            self.out.print(failed)
        self.out.print(
            f"{result.chunks_total} chunks in the index, {result.chunks_embedded} embedded now, "
            f"in {result.elapsed_ms / 1000:.1f} s"
        )
        if result.chunks_embedded < result.chunks_total:
            self.out.print(
                "(chunks of identical text share one vector: a text is embedded once, and "
                "text embedded in an earlier pass keeps its vector)"
            )
        if model != "ready":
            _say(
                self.err,
                f"note: the embedding model is {model}; files are searchable by keyword only",
            )
        for notice in result.notices:
            _say(self.err, f"note: {notice}")

    # -- search --------------------------------------------------------------------

    def hits(self, result: SearchResult, query: str) -> None:
        terms = query_terms(query)
        if not result.results:
            self.out.print("no passages found")
        for hit in result.results:
            where = (
                f"page {hit.page}" if hit.page is not None else _lines(hit.line_start, hit.line_end)
            )
            head = Text(f"{hit.rank}. ", style="bold")
            head.append(hit.path, style="bold cyan")
            head.append(f"  {where}" if where else "")
            score = "" if hit.score is None else f", cosine {hit.score:.2f}"
            head.append(f"  relevance {hit.relevance:.2f}{score}", style="dim")
            self.out.print(head)
            self.out.print(highlighted(snippet(hit.snippet, terms), terms), style=None)
            if hit.repeated is not None:
                self.out.print(
                    Text(_repeated(hit.repeated.count, hit.repeated.places)), style="dim"
                )
            self.out.print()
        for notice in result.notices:
            _say(self.err, f"note: {notice}")

    # -- status --------------------------------------------------------------------

    def status(self, s: IndexSummary, model: str) -> None:
        table = Table(show_header=False, box=None)
        table.add_column(style="bold")
        table.add_column(overflow="fold")
        table.add_row("index", Text(s.index_folder))
        table.add_row("files", f"{s.files_indexed} indexed, {s.files_failed} failed")
        if s.skipped:
            table.add_row("skipped", Text("; ".join(_skip_line(g) for g in s.skipped)))
        if s.kept:
            files = ", ".join(f"{n} {ext}" for ext, n in s.kept.items())
            said = f"{files}: indexed by an installation that reads them; this one cannot"
            table.add_row("kept", Text(said))
        table.add_row("chunks", f"{s.chunks}, {s.chunks_with_vectors} with a saved vector")
        # An id's parts apart, so a narrow terminal wraps between them, not inside a word.
        table.add_row("model", Text(f"{_spaced(s.vector_model) or 'none yet'} ({model})"))
        table.add_row("chunking", Text(_spaced(s.chunking) or "none yet"))
        size = "not known (the store does not say)" if s.size_bytes is None else _size(s.size_bytes)
        table.add_row("size on disk", size)
        when = (
            "never"
            if s.last_indexed_at is None
            else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.last_indexed_at))
        )
        table.add_row("last file indexed", when)
        writer = "none"
        if s.writer is not None:
            far = f" {s.writer.done}/{s.writer.total}" if s.writer.total else ""
            writer = f"process {s.writer.pid or '?'} is writing the index ({s.writer.phase}{far})"
        table.add_row("writing now", writer)
        self.out.print(table)
        if s.failed:
            failed = Table(show_header=True, header_style="bold", box=None)
            failed.add_column("failed file", overflow="fold")
            failed.add_column("reason", overflow="fold")
            for path, reason in s.failed:
                failed.add_row(Text(path), Text(reason))
            self.out.print(failed)

    @staticmethod
    def status_json(s: IndexSummary, model: str) -> dict[str, Any]:
        out = asdict(s)
        out["failed"] = [{"path": p, "reason": r} for p, r in s.failed]
        out["model"] = model
        return out

    # -- read ----------------------------------------------------------------------

    def passage(
        self,
        p: TextPassage,
        folder: str,
        page: int | None = None,
        end: int | None = None,
        max_chars: int | None = None,
    ) -> None:
        """The text on stdout; where it lies, notes, and how to read on, on stderr."""
        where = [f"characters {p.char_start}-{p.char_end} of {p.total_chars}"]
        if p.page is not None:
            where.append(f"page {p.page}")
        if p.line_start is not None:
            where.append(_lines(p.line_start, p.line_end))
        if p.changed is not None:
            where.append(f"edited, {p.similarity:.0%} in place" if p.changed else "unchanged")
        _say(self.err, f"{p.path}: {', '.join(where)}")
        sys.stdout.write(p.text + ("" if p.text.endswith("\n") else "\n"))
        sys.stdout.flush()
        for notice in p.notices:
            _say(self.err, f"note: {notice}")
        if p.next_char_start is not None:
            # The same range and length as asked: only where it starts moves on.
            kept = [f"--page {page}"] if page is not None else []
            kept += [f"--end {end}"] if end is not None else []
            kept += [f"--max-chars {max_chars}"] if max_chars is not None else []
            _say(
                self.err,
                f"more: micro-rag read {shlex.quote(folder)} {shlex.quote(p.path)} "
                f"--start {p.next_char_start}" + "".join(f" {k}" for k in kept),
            )


def _say(console: Console, line: str) -> None:
    """One line as it is: no markup, no colouring, no wrapping."""
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def query_terms(query: str) -> list[str]:
    """The query's words worth marking: no stop words, no single letters."""
    words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 1 and w not in STOPWORDS]
    return sorted(set(words), key=lambda w: (-len(w), w))  # longest first: "doughs" before "dough"


def snippet(text: str, terms: list[str], width: int = SNIPPET_CHARS) -> str:
    """The passage on one line, cut to ``width`` around the first query word found."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    found = [m.start() for t in terms if (m := _word(t).search(flat))]
    at = min(found) if found else 0
    start = max(0, min(at - width // 3, len(flat) - width))
    cut = flat[start : start + width]
    return ("…" if start > 0 else "") + cut + ("…" if start + width < len(flat) else "")


def highlighted(text: str, terms: list[str]) -> Text:
    out = Text(text)
    for term in terms:
        out.highlight_regex(_word(term), style="bold yellow")
    return out


def _word(term: str) -> re.Pattern[str]:
    """The term at the start of a word, in any case, with its ending (dough, doughs)."""
    return re.compile(rf"\b{re.escape(term)}\w*", re.IGNORECASE)


def _skip_line(g: SkipGroup) -> str:
    """``2 not a regular file (a.txt, b.txt)``: the examples, then how many more."""
    more = g.count - len(g.examples)
    return f"{g.count} {g.reason} ({', '.join(g.examples)}{f', +{more}' if more else ''})"


def _lines(first: int | None, last: int | None) -> str:
    if first is None:
        return ""
    return f"line {first}" if first == last else f"lines {first}-{last}"


def _size(n: int) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return f"{n} bytes"


def _spaced(record: str | None) -> str:
    """A recorded id (``model@rev;title+text``) with a space after each ``;``."""
    return (record or "").replace(";", "; ")


def _repeated(count: int, places: Sequence[str]) -> str:
    """``also in 7 other places: a.md lines 4–9, b.md lines 1–3 and 5 more``."""
    more = f" and {count - len(places)} more" if count > len(places) else ""
    other = "place" if count == 1 else "places"
    return f"also in {count} other {other}: {', '.join(places)}{more}"
