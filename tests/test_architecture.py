"""The folder tree is the architecture: each package one concept, imports only downwards,
the two backends peers, no import circle (through a package's ``__init__`` too), no module
too long to read and no class too wide to hold in mind (docs/architecture.md)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "micro_rag_mcp"
MAX_LINES = 400
MAX_PUBLIC_METHODS = 25

# Each part of the package and what it may import (besides itself). A part may import
# only parts of lower floors; the two backends stand on one floor and never meet.
MAY_IMPORT: dict[str, set[str]] = {
    "core": set(),
    "text": {"core"},
    "ingest": {"core", "text"},
    "model": {"core", "text"},
    "search": {"core", "text", "ingest"},
    "local": {"core", "text", "ingest", "model", "search"},
    "milvus": {"core", "text", "ingest", "model", "search"},
    "store": {"core", "text", "ingest", "model", "search", "local", "milvus"},
    "options": {"core", "ingest", "milvus"},
    "serve": {"core", "text", "ingest", "model", "search", "store", "options"},
    "service": {"core", "text", "ingest", "model", "search", "store", "options", "serve"},
    "cli": {"core", "text", "ingest", "model", "search", "store", "options", "serve", "service"},
    "__main__": {"service"},
}


def modules() -> Iterator[tuple[str, Path]]:
    """Each module by its import name: a package by its own name, not ``….__init__``."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(("micro_rag_mcp", *parts)), path


def part_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imported(path: Path) -> Iterator[str]:
    """Every module of the package that ``path`` imports, at the top or inside a function.

    ``from package import name`` imports the package and, when ``name`` is a module of
    it, that module too.
    """
    known = {module for module, _ in modules()}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "micro_rag_mcp" or node.module.startswith("micro_rag_mcp."):
                yield node.module
                yield from (
                    f"{node.module}.{a.name}"
                    for a in node.names
                    if f"{node.module}.{a.name}" in known
                )
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("micro_rag_mcp."))


def with_packages(module: str) -> Iterator[str]:
    """``module`` and every package above it inside ``micro_rag_mcp``: importing a module
    runs the ``__init__`` of each package on its way."""
    parts = module.split(".")
    for end in range(2, len(parts) + 1):
        yield ".".join(parts[:end])


def test_every_part_of_the_package_is_named_here() -> None:
    parts = {part_of(m) for m, _ in modules()} - {"", "__version__"}
    assert parts == set(MAY_IMPORT)


@pytest.mark.parametrize(("module", "path"), list(modules()), ids=lambda x: str(x))
def test_imports_run_only_downwards(module: str, path: Path) -> None:
    mine = part_of(module)
    if mine == "":
        return
    wrong = {
        target
        for target in imported(path)
        if part_of(target) not in (mine, "", "__version__")
        and part_of(target) not in MAY_IMPORT[mine]
    }
    assert not wrong, f"{module} ({mine}) may not import {sorted(wrong)}"


def import_graph() -> dict[str, set[str]]:
    """Each module and the modules importing it runs: what it names (``from pkg import
    name`` names ``pkg``, and ``pkg.name`` when that is a module) and the packages on the
    way there."""
    paths = dict(modules())
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        targets = {target for target in imported(path) if target in paths}
        # The packages on the way to a target run too, but not those the module is in:
        # they are running already, unless the module names one itself (above).
        targets |= {
            step
            for target in imported(path)
            for step in with_packages(target)
            if step in paths and not module.startswith(step + ".")
        }
        graph[module] = targets - {module}
    return graph


def test_no_module_imports_itself_back_through_others() -> None:
    graph = import_graph()
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            raise AssertionError("import circle: " + " -> ".join([*trail, module]))
        if module in done:
            return
        for target in graph[module]:
            visit(target, [*trail, module])
        done.add(module)

    for module in graph:
        visit(module, [])


def test_no_module_is_longer_than_a_reader_keeps_in_mind() -> None:
    long = {
        module: n
        for module, path in modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"over {MAX_LINES} lines: {long}"


def public_methods(path: Path) -> Iterator[tuple[str, int]]:
    """Each class of ``path`` and how many public methods it has, its bases' in the
    package counted too (a class split across two files by inheritance is one class)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            yield (
                node.name,
                len(_public(node)) + sum(len(_public(base)) for base in _bases_in_package(node)),
            )


def _public(node: ast.ClassDef) -> set[str]:
    return {
        item.name
        for item in node.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not item.name.startswith("_")
    }


def _bases_in_package(node: ast.ClassDef) -> list[ast.ClassDef]:
    names = {base.id for base in node.bases if isinstance(base, ast.Name)}
    return [c for c in _all_classes() if c.name in names and c is not node]


def _all_classes() -> list[ast.ClassDef]:
    if not _CLASSES:
        for _, path in modules():
            tree = ast.parse(path.read_text(encoding="utf-8"))
            _CLASSES.extend(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))
    return _CLASSES


_CLASSES: list[ast.ClassDef] = []


def test_no_class_has_more_public_methods_than_a_reader_keeps_in_mind() -> None:
    wide = {
        f"{module}.{name}": n
        for module, path in modules()
        for name, n in public_methods(path)
        if n > MAX_PUBLIC_METHODS
    }
    assert not wide, f"over {MAX_PUBLIC_METHODS} public methods: {wide}"


def test_a_circle_through_a_package_init_is_caught(tmp_path: Path) -> None:
    """The circle check sees ``from pkg import name`` as an import of ``pkg/__init__``."""
    (tmp_path / "pkg").mkdir()
    init = tmp_path / "pkg" / "__init__.py"
    init.write_text("from micro_rag_mcp.ingest.readers.mail import read_eml\n")
    back = tmp_path / "pkg" / "mail.py"
    back.write_text("def f():\n    from micro_rag_mcp.ingest.readers import READERS\n")
    assert "micro_rag_mcp.ingest.readers.mail" in set(imported(init))
    assert "micro_rag_mcp.ingest.readers" in set(imported(back))
