"""The folder tree is the architecture: each package one concept, imports only downwards,
the two backends peers, no module too long to read (docs/architecture.md)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "micro_rag_mcp"
MAX_LINES = 400

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
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        yield ".".join(("micro_rag_mcp", *parts)), path


def part_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imported(path: Path) -> Iterator[str]:
    """Every module of the package that ``path`` imports, at the top or inside a function."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "micro_rag_mcp":
                yield from (f"micro_rag_mcp.{a.name}" for a in node.names)
            elif node.module.startswith("micro_rag_mcp."):
                yield node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("micro_rag_mcp."))


def test_every_part_of_the_package_is_named_here() -> None:
    parts = {part_of(m) for m, _ in modules()} - {"", "__init__", "__version__"}
    assert parts == set(MAY_IMPORT)


@pytest.mark.parametrize(("module", "path"), list(modules()), ids=lambda x: str(x))
def test_imports_run_only_downwards(module: str, path: Path) -> None:
    mine = part_of(module)
    if mine in ("", "__init__"):
        return
    wrong = {
        target
        for target in imported(path)
        if part_of(target) not in (mine, "__version__", "__init__")
        and part_of(target) not in MAY_IMPORT[mine]
    }
    assert not wrong, f"{module} ({mine}) may not import {sorted(wrong)}"


def test_no_module_imports_itself_back_through_others() -> None:
    graph = {module: set(imported(path)) for module, path in modules()}
    graph = {m: {t for t in targets if t in graph} for m, targets in graph.items()}
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
