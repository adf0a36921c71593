"""The README is the manual: every flag and tool parameter is documented, nothing more."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import anyio

from micro_rag_mcp.cli import app as cli
from micro_rag_mcp.serve.main import build_parser
from micro_rag_mcp.serve.server import build_server
from tests.fakes import FakeEmbedder
from tests.settingskit import make_settings

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_every_command_line_flag_is_documented_and_no_other() -> None:
    flags = {
        opt
        for action in build_parser()._actions
        for opt in action.option_strings
        if opt.startswith("--")
    }
    table = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`(--[a-z-]+)", table))
    assert flags == documented


def tool_fields(schema: dict[str, Any]) -> set[str]:
    """Every property name in a JSON schema, nested models included."""
    names = set(schema.get("properties", {}))
    for sub in schema.get("$defs", {}).values():
        names |= tool_fields(sub)
    return names


def test_every_tool_parameter_and_result_field_is_documented(tmp_path: Path) -> None:
    server = build_server(make_settings(tmp_path), FakeEmbedder)
    tools = README.split("## Tools", 1)[1].split("\n## ", 1)[0]
    sections = dict(re.findall(r"### `(\w+)`\n(.*?)(?=\n### |\Z)", tools, re.S))
    listed = anyio.run(server.list_tools)
    assert sorted(sections) == sorted(t.name for t in listed)
    for tool in listed:
        section = sections[tool.name]
        for param in tool.input_schema["properties"]:
            assert f"| `{param}` |" in section, f"{tool.name}({param}) has no row"
        for field in tool_fields(tool.output_schema or {}):
            assert f"`{field}`" in section, f"{tool.name} result field {field}"
        if tool.name == "search":  # its results' wrapping (results, index, notices) is prose
            continue
        rows = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)? \|", section, re.M))
        for field in (tool.output_schema or {}).get("properties", {}):
            assert any(field in row for row in rows), f"{tool.name} result field {field} has no row"


def documented(option: str, text: str) -> bool:
    """Whether ``option`` appears in some `code span` of ``text``, as a whole word."""
    return re.search(rf"`[^`\n]*(?<![\w-]){re.escape(option)}(?![\w-])[^`\n]*`", text) is not None


def test_every_micro_rag_command_and_option_is_documented() -> None:
    section = README.split("## The `micro-rag` command", 1)[1].split("\n## ", 1)[0]
    common = section.split("\n### ", 1)[0]
    parser = cli.build_parser()
    for option in (o for a in parser._actions for o in a.option_strings if o != "-h"):
        assert documented(option, common), option
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    options = {
        name: {o for a in command._actions for o in a.option_strings if o != "-h"}
        for name, command in commands.items()
    }
    shared = set.intersection(*options.values())  # documented once, for every command
    for option in shared:
        assert documented(option, common), option
    for name, command in commands.items():
        head = f"### `micro-rag {name} "
        assert head in section, f"no section for micro-rag {name}"
        own = section.split(head, 1)[1].split("\n### ", 1)[0]
        for action in command._actions:
            if not action.option_strings:
                assert f"{action.metavar}" in own.split("\n", 1)[0], (name, action.metavar)
        for option in options[name] - shared:
            assert documented(option, own), (name, option)


def test_every_example_runs_from_a_fresh_shell() -> None:
    """No example calls a command of the virtual environment as if it were activated."""
    lines, fence = [], ""
    for line in README.splitlines():
        if line.startswith("```"):
            fence = "" if fence else (line[3:] or "text")
        elif fence in ("sh", "text"):
            lines.append(line.strip())
    bare = [
        line
        for line in lines
        if re.match(r"(micro-rag(-mcp)?|pip|python|pytest|ruff|mypy)\b", line)
        or re.search(r"&& (micro-rag(-mcp)?|pip|pytest)\b", line)
    ]
    assert bare == []
    assert any(line.startswith(".venv/bin/micro-rag search") for line in lines)
