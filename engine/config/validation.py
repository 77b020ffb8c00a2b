"""Turn pydantic validation errors into ``ConfigIssue``s with the key's own line and a human message.

pydantic reports ``loc`` tuples that mix data keys with schema tags (union members such as ``'str'``, dict-key
markers ``'[key]'``) and phrases like "Input should be greater than 0". This module walks each ``loc`` against
the actual data to get the key path, finds the nearest line recorded by the loader, rewords the message
("must be > 0", "unknown key 'retsart' (did you mean 'restart'?)") and merges the per-member errors of a union
into one ("must be a string or an integer"). It never renders the offending input value itself.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from engine.config.errors import ConfigIssue, KeyPath, format_path
from engine.config.models import FieldError, Settings

LineIndex = Mapping[KeyPath, int]


def line_for(path: KeyPath, lines: LineIndex) -> int | None:
    """Line of ``path``, or of its closest ancestor present in the file."""
    for n in range(len(path), 0, -1):
        line = lines.get(path[:n])
        if line is not None:
            return line
    return None


def _unwrap(tp: Any) -> Any:
    """``X | None`` -> ``X``; a union of several types -> the first model or container among them."""
    if get_origin(tp) in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        for member in members:
            if isinstance(member, type) and issubclass(member, BaseModel):
                return member
            if get_origin(member) in (dict, list):
                return member
        return members[0] if members else tp
    return tp


def model_at(path: KeyPath, root: type[BaseModel] = Settings) -> type[BaseModel] | None:
    """The model class that validates the mapping at ``path`` (None for free-form places)."""
    tp: Any = root
    for part in path:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = next(
                (f for name, f in tp.model_fields.items() if part in (name, f.alias)),
                None,
            )
            if field is None:
                return None
            tp = field.annotation
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        elif get_origin(tp) is list:
            tp = get_args(tp)[0]
        else:
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def known_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


_EXPECTED: dict[str, str] = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "dict_type": "must be a mapping (key: value)",
    "model_type": "must be a mapping (key: value)",
    "model_attributes_type": "must be a mapping (key: value)",
    "list_type": "must be a list",
}
_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
_BOUND_CTX = {"greater_than": "gt", "greater_than_equal": "ge", "less_than": "lt", "less_than_equal": "le"}


def _data_path(loc: tuple[Any, ...], data: Any, err_type: str) -> tuple[KeyPath, bool]:
    """Walk ``loc`` through ``data``: keep real keys/indexes, drop schema tags; flag dict-key errors."""
    path: list[str | int] = []
    cur: Any = data
    for i, part in enumerate(loc):
        if part == "[key]":
            return tuple(path), True
        if isinstance(cur, Mapping) and part in cur:
            path.append(part)
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            path.append(part)
            cur = cur[part]
        elif isinstance(cur, Mapping) and isinstance(part, str) and err_type == "missing" and i == len(loc) - 1:
            path.append(part)
            cur = None
        else:
            break
    return tuple(path), False


def _message(err: Mapping[str, Any], path: KeyPath, key_error: bool) -> str:
    etype: str = err["type"]
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    value = err.get("input")
    if key_error:
        if etype == "value_error":
            return str(err["msg"]).removeprefix("Value error, ")
        return f"key {value!r} must be text, not {_kind(value)} (quote it)"
    if etype == "extra_forbidden":
        key = str(path[-1]) if path else "?"
        model = model_at(path[:-1])
        valid = known_keys(model) if model else []
        close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
        if close:
            return f"unknown key {key!r} (did you mean {close[0]!r}?)"
        return f"unknown key {key!r} (expected one of: {', '.join(valid)})" if valid else f"unknown key {key!r}"
    if etype == "missing":
        return "is required but missing"
    if etype in _BOUNDS:
        return f"must be {_BOUNDS[etype]} {ctx.get(_BOUND_CTX[etype])}"
    if etype == "literal_error":
        msg = f"must be one of {ctx.get('expected')}"
        if isinstance(value, str):
            options = [o.strip(" '") for o in str(ctx.get("expected", "")).replace(" or ", ", ").split(",")]
            close = difflib.get_close_matches(value, options, n=1, cutoff=0.6)
            if close:
                msg += f" (did you mean {close[0]!r}?)"
        return msg
    if etype in _EXPECTED:
        msg = f"{_EXPECTED[etype]}, not {_kind(value)}"
        if etype == "string_type" and isinstance(value, int | float):
            msg += " (quote it)"
        return msg
    if etype == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    if etype == "assertion_error":
        return str(err["msg"]).removeprefix("Assertion failed, ")
    text = str(err["msg"])
    return text[:1].lower() + text[1:]


def _merge(messages: list[str]) -> str:
    """Union members fail one by one: "must be a string, not a list" + "must be a number, not a list"."""
    unique = list(dict.fromkeys(messages))
    if len(unique) > 1 and all(m.startswith("must be ") and ", not " in m for m in unique):
        wants = [m.removeprefix("must be ").split(", not ")[0] for m in unique]
        got = unique[0].split(", not ")[1]
        return f"must be {' or '.join(dict.fromkeys(wants))}, not {got}"
    return "; ".join(unique)


def issues_from_validation(
    exc: ValidationError, *, source: str, data: Any, lines: LineIndex
) -> list[tuple[KeyPath, ConfigIssue]]:
    """One issue per key path (union errors merged), in file order; each paired with its key path."""
    grouped: dict[KeyPath, list[str]] = {}
    display: dict[KeyPath, KeyPath] = {}  # a bad dict key is shown at its mapping, on the key's own line
    for err in exc.errors(include_url=False):
        error = (err.get("ctx") or {}).get("error")
        if err["type"] == "value_error" and isinstance(error, FieldError):
            base, _ = _data_path(tuple(err["loc"]), data, "value_error")
            candidates = [(*base, *c) for c in error.candidates]
            path = next((c for c in candidates if c in lines), candidates[0])
            grouped.setdefault(path, []).append(error.message)
            continue
        path, key_error = _data_path(tuple(err["loc"]), data, err["type"])
        shown = path[:-1] if key_error and err["type"] != "value_error" else path
        grouped.setdefault(path, []).append(_message(err, path, key_error))
        display[path] = shown
    out = [
        (path, ConfigIssue(source, line_for(path, lines), format_path(display.get(path, path)), _merge(msgs)))
        for path, msgs in grouped.items()
    ]
    out.sort(key=lambda item: (item[1].line or 0, item[1].path))
    return out
