"""Tool arguments taken exactly as the input schema states them, refused in plain words.

A tool's arguments are checked against a strict copy of its argument model: a string is
not an integer or a boolean, and a name the schema does not list is refused rather than
dropped. JSON has one number type, so an integer passes for a number and an integral
number (``3.0``) for an integer. Some clients send every value they do not find a plain
``type`` for as the string typed (the MCP Inspector's CLI, for ``int | None`` and
``list[str] | None``): a string whose meaning is plain is taken as that value (``"3"``
for an integer, ``"0.5"`` for a number, ``"pdf,docx"`` or ``'["pdf"]'`` for a list of
strings); any other string is refused as before. Every problem becomes one sentence that names the
parameter and the value given, which is what a model needs to correct its call.
"""

from __future__ import annotations

import json
import re
from types import UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from micro_rag_mcp.core.errors import InvalidArgument
from micro_rag_mcp.core.shown import shown as shown  # also the edges' quoting

_KINDS = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "string_type": "a string",
    "list_type": "a list of strings",
}
_BOUNDS = {"greater_than_equal", "less_than_equal"}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")

# The longest strings the tools and the CLI take. A query is embedded as its first 256
# word pieces (about 1,000 characters); a path or a glob as long as the longest path
# Linux opens. Unbounded, a 50 MB query cost 73 s and 1.6 GB, a 50 MB glob 246 s and 8 GB.
MAX_QUERY_CHARS = 2_000
MAX_PATH_CHARS = 4_096
MAX_GLOB_CHARS = 4_096
MAX_GLOBS = 100  # the patterns of one search's path_glob, each matched against every path
_NAMED_UNKNOWN = 10  # unknown names quoted back

M = TypeVar("M", bound=BaseModel)


def strict_model(model: type[M]) -> type[M]:
    """The same fields, description and JSON schema title, validated strictly.

    Unknown names are refused, which the schema states as ``additionalProperties: false``.
    """
    title = model.model_config.get("title") or model.__name__
    config = ConfigDict(strict=True, extra="forbid", title=title)
    return type(model.__name__, (model,), {"model_config": config, "__module__": model.__module__})


def check_arguments(model: type[BaseModel], arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as validated by ``model``, keyed by their wire names.

    Raises ``InvalidArgument`` with one line per problem.
    """
    try:
        checked = model.model_validate(_as_meant(model, arguments))
    except ValidationError as e:
        raise InvalidArgument("\n".join(_sentences(model, e.errors(), arguments))) from None
    return checked.model_dump(by_alias=True, exclude_unset=True)


def too_long(name: str, limit: int, length: int) -> str:
    """The sentence for a string over its limit, in tool calls and on the command line."""
    return f"{name} must be at most {limit:,} characters (got {length:,})"


def too_many(name: str, limit: int, count: int) -> str:
    """The sentence for a list over its limit."""
    return f"{name} must hold at most {limit:,} items (got {count:,})"


def _as_meant(model: type[BaseModel], arguments: dict[str, Any]) -> dict[str, Any]:
    """Each value as the client meant it, where that is plain (the module's docstring)."""
    out = dict(arguments)
    for name, field in _fields_by_wire_name(model).items():
        value = out.get(name)
        kind = _single_type(field.annotation)
        if kind is int and type(value) is float and value.is_integer():
            out[name] = int(value)  # ``3.0`` for an integer is the JSON number 3
        elif isinstance(value, str):
            out[name] = _from_string(kind, value)
    return out


def _from_string(kind: Any, value: str) -> Any:
    text = value.strip()
    if kind is int and _INTEGER.fullmatch(text):
        return int(text)
    if kind is float and _NUMBER.fullmatch(text):
        return float(text)
    if kind == list[str]:
        if text.startswith("["):
            try:
                items = json.loads(text)
            except ValueError:
                return value
            return items if isinstance(items, list) else value
        return [item.strip() for item in text.split(",") if item.strip()]
    return value


def _single_type(annotation: Any) -> Any:
    """The type of a parameter that takes one type (or null); ``None`` for a union."""
    members = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (Union, UnionType):
        return members[0] if len(members) == 1 else None
    return annotation


def _sentences(
    model: type[BaseModel], errors: list[ErrorDetails], arguments: dict[str, Any]
) -> list[str]:
    fields = _fields_by_wire_name(model)
    sentences: list[str] = []
    named: set[str] = set()
    unknown: list[str] = []
    for error in sorted(errors, key=lambda e: not _fits(e, arguments)):
        name = str(error["loc"][0]) if error["loc"] else ""
        if error["type"] == "extra_forbidden":
            unknown.append(name)
        elif name not in named:  # one sentence per parameter: its first problem
            named.add(name)
            kinds = [_KINDS[e["type"]] for e in errors if _of_type(e, name)]
            sentences.append(_sentence(name, fields.get(name), error, kinds))
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        names = ", ".join(shown(n) for n in unknown[:_NAMED_UNKNOWN])
        if len(unknown) > _NAMED_UNKNOWN:
            names += f" and {len(unknown) - _NAMED_UNKNOWN} more"
        sentences.append(
            f"unknown argument{plural} {names}; the parameters are {', '.join(fields)}"
        )
    return sentences


def _fits(error: ErrorDetails, arguments: dict[str, Any]) -> bool:
    """Whether the error is of the union member that fits the value sent: for a list, the
    list's (its length, an item), so that a list is not told it must be a string."""
    loc = error["loc"]
    if len(loc) < 2 or not isinstance(arguments.get(str(loc[0])), list):
        return True
    return str(loc[1]).startswith("list[")


def _of_type(error: ErrorDetails, name: str) -> bool:
    """An error that the whole value of ``name`` (or of a member of its union) is not
    of a type."""
    loc = error["loc"]
    return bool(loc) and str(loc[0]) == name and len(loc) <= 2 and error["type"] in _KINDS


def _sentence(
    name: str, field: FieldInfo | None, error: ErrorDetails, kinds: list[str] | None = None
) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "missing":
        return f"{name} is required"
    index = next((p for p in error["loc"][1:] if isinstance(p, int)), None)
    if index is not None:  # an item of a list: named with its place
        name, field, kinds = f"{name}[{index}]", None, None
    got = f"(got {shown(value)})"
    if kind in _KINDS:
        nullable = field is not None and not field.is_required() and field.default is None
        allowed = " or ".join(dict.fromkeys(kinds or [_KINDS[kind]]))
        return f"{name} must be {allowed}{' or null' if nullable else ''} {got}"
    if kind == "too_long":  # a list
        ctx = error.get("ctx") or {}
        return too_many(name, int(ctx["max_length"]), int(ctx["actual_length"]))
    if kind in _BOUNDS and field is not None and (bounds := _range(field)):
        return f"{name} must be {bounds} {got}"
    if kind == "string_too_short":
        return f"{name} must contain some text {got}"
    if kind == "string_too_long":
        return too_long(name, int((error.get("ctx") or {})["max_length"]), len(str(value)))
    return f"{name}: {error['msg'][:1].lower()}{error['msg'][1:]} {got}"


def _range(field: FieldInfo) -> str | None:
    low = next((m.ge for m in field.metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
    if low is not None and high is not None:
        return f"between {low:g} and {high:g}"
    if low is not None:
        return f"at least {low:g}"
    if high is not None:
        return f"at most {high:g}"
    return None


def _fields_by_wire_name(model: type[BaseModel]) -> dict[str, FieldInfo]:
    return {field.alias or name: field for name, field in model.model_fields.items()}
