"""The shapes a benchmark writes a dataset's documents in: one document, one file.

A dev collection is ``(title, text)`` pairs; people's folders are not all shaped like
the file the harness wrote first (the title alone on the first line, a blank line, the
text: exactly what the ``.txt`` first-line title rule looks for). A ranking rule that
only helps that shape will not hold on other folders, so the benchmarks can write each
collection in several:

* ``title-txt``: ``title``, blank line, ``text`` in a ``.txt`` file (the harness's first
  shape, and the default);
* ``md``: a Markdown note, ``# title`` heading, blank line, ``text`` (``.md``);
* ``plain``: the text alone, no title line (``.txt``);
* ``title-joined``: title and text in one paragraph (``.txt``): the title is there, but
  does not stand alone as a line.

A document without a title is its text alone in every shape (``title-txt`` keeps the
harness's bytes: a blank first line), so a collection without titles is one shape.
"""

from __future__ import annotations

SHAPES: dict[str, str] = {  # shape -> file suffix
    "title-txt": ".txt",
    "md": ".md",
    "plain": ".txt",
    "title-joined": ".txt",
}
DEFAULT_SHAPE = "title-txt"


def suffix_of(shape: str) -> str:
    """The file suffix a document of this shape is written with."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")
    return SHAPES[shape]


def document_text(shape: str, title: str, text: str) -> str:
    """A document's file content in this shape."""
    suffix_of(shape)  # an unknown shape is refused
    if shape == "title-txt":
        return f"{title.strip()}\n\n{text.strip()}\n"  # the harness's bytes, unchanged
    title, text = " ".join(title.split()), text.strip()  # a heading is one line
    if not title or shape == "plain":
        return f"{text}\n"
    if shape == "md":
        return f"# {title}\n\n{text}\n"
    return f"{title} {text}\n" if text else f"{title}\n"
