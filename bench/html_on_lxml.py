"""Would the HTML reader give the same text on lxml.html as on selectolax? (A trial.)

    PYTHONPATH=src .venv/bin/python -m bench.html_on_lxml LIST_OF_PAGES [--show 10]

LIST_OF_PAGES is a file naming one page a line. The reader's own walk (``web._Walker``)
runs on the tree of libxml2's HTML parser (lxml, huge-tree mode) in place of lexbor's,
with the one correction HTML5 makes that libxml2 does not (a newline right after
``<pre>`` is dropped). Prints how many pages give the same document, the first
differences, the CPU seconds of each, and what each parser makes of a page nested
300, 2,000 and 3,000 deep (the reader's bound is ``web.MAX_HTML_DEPTH``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from micro_rag_mcp.core.errors import ReadError  # noqa: E402
from micro_rag_mcp.ingest.readers import web  # noqa: E402
from micro_rag_mcp.ingest.readers.document import (  # noqa: E402
    Document,
    DocumentBuilder,
    HeadingPath,
    clean_title,
)
from micro_rag_mcp.ingest.readers.guards import Budget  # noqa: E402

_ENTER, _LEAVE, _TEXT = 0, 1, 2


class _Node:
    """The calls the walker makes on a selectolax node, on an lxml element."""

    __slots__ = ("el",)

    def __init__(self, el: Any) -> None:
        self.el = el

    @property
    def tag(self) -> str:
        return self.el.tag if isinstance(self.el.tag, str) else "_comment"

    @property
    def attributes(self) -> Any:
        return self.el.attrib

    def text(self, deep: bool = True, separator: str = "") -> str:
        text = separator.join(self.el.itertext())
        if self.el.tag == "pre" and (self.el.text or "").startswith("\n"):
            text = text[1:]  # HTML5 drops a newline right after <pre>; libxml2 keeps it
        return text


class _LxmlWalker(web._Walker):
    def walk(self, root: Any) -> None:
        stack: list[tuple[Any, int]] = [(root, _ENTER)]
        while stack:
            node, action = stack.pop()
            if action == _LEAVE:
                self._leave(_Node(node))
            elif action == _TEXT:
                self.inline.append(web._SPACES.sub(" ", node))
            elif isinstance(node.tag, str) and self._enter(_Node(node)):
                stack.append((node, _LEAVE))
                for child in reversed(node):
                    if child.tail:
                        stack.append((child.tail, _TEXT))
                    stack.append((child, _ENTER))
                if node.text:
                    stack.append((node.text, _TEXT))
        self._flush()


def read_with_lxml(path: Path) -> Document:
    from lxml import etree

    html = web._without_dtd_subset(web.decode_html(path.read_bytes()))
    if web.nesting_depth(html, web.MAX_HTML_DEPTH) > web.MAX_HTML_DEPTH:
        raise ReadError(f"refused: tags nested more than {web.MAX_HTML_DEPTH:,} deep")
    parser = etree.HTMLParser(encoding="utf-8", no_network=True, huge_tree=True)
    try:
        root = etree.fromstring(html.encode("utf-8", "surrogatepass"), parser)
    except etree.XMLSyntaxError:
        root = None
    builder = DocumentBuilder()
    title = ""
    if root is not None:
        title_el = next(root.iter("title"), None)
        title = "".join(title_el.itertext()) if title_el is not None else ""
        _LxmlWalker(builder, HeadingPath(), Budget(600), path).walk(root)
    return builder.build(clean_title(title))


def _run(read: Callable[[Path], Document], path: Path) -> Document | str:
    try:
        return read(path)
    except ReadError as e:
        return f"ReadError: {e}"


def _first_difference(old: str, new: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), None)
    at = min(len(old), len(new)) if at is None else at
    return f"at {at}: {old[max(0, at - 40) : at + 40]!r} -> {new[max(0, at - 40) : at + 40]!r}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", type=Path, help="a file naming one page a line")
    parser.add_argument("--show", type=int, default=10, help="differences to print")
    args = parser.parse_args()
    pages = [Path(line.strip()) for line in args.pages.read_text().splitlines() if line.strip()]
    same, shown, cpu_old, cpu_new = 0, 0, 0.0, 0.0
    for page in pages:
        started = time.process_time()
        old = _run(web.read_html, page)
        middle = time.process_time()
        new = _run(read_with_lxml, page)
        cpu_old, cpu_new = cpu_old + middle - started, cpu_new + time.process_time() - middle
        if isinstance(old, str) or isinstance(new, str):
            differ = [] if old == new else ["reading"]
        else:
            differ = [
                f.name
                for f in dataclasses.fields(old)
                if getattr(old, f.name) != getattr(new, f.name)
            ]
        same += not differ
        if differ and shown < args.show:
            shown += 1
            detail = _first_difference(old.text, new.text) if "text" in differ else ""  # type: ignore[union-attr]
            print(f"{page}: differs in {', '.join(differ)} {detail}")
    print(f"the same document: {same} of {len(pages)} pages")
    print(f"CPU s: selectolax {cpu_old:.2f}, lxml {cpu_new:.2f}")
    deep = args.pages.parent / "deep-trial.html"
    for depth in (300, 2000, 3000):
        deep.write_text("<div>" * depth + "<p>bottom text</p>" + "</div>" * depth)
        texts = [_run(read, deep) for read in (web.read_html, read_with_lxml)]
        found = ["bottom text" in (t if isinstance(t, str) else t.text) for t in texts]
        print(f"nested {depth:,} deep: text read by selectolax {found[0]}, by lxml {found[1]}")
    deep.unlink()


if __name__ == "__main__":
    main()
