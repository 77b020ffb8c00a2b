"""The fast path of argument validation: schemas that use only the common keywords (``FAST_KEYWORDS`` with
well-typed values) are compiled once into small closures that name every violation, a few microseconds a call.

Why a module of its own: it is an optimisation of the reference validator and must agree with it on every
instance (tests/engine/tools/test_validator_agreement.py); ``engine.tools.validation`` decides which path a schema
takes and owns the rest (parsing, bounds, the null rule).
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from engine.tools.limits import clip
from engine.tools.schema_rules import _FAST_KEYWORDS, _TYPES, FORMAT_CHECKER, js_pattern

Check = Callable[[Any, str, list[str]], None]

_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _canon(v: Any) -> Any:
    """A hashable key under which two JSON values are equal exactly when JSON Schema says so (1 == 1.0, 1 != true)."""
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int | float):
        return ("n", v)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list | tuple):
        return ("l", tuple(_canon(x) for x in v))
    if isinstance(v, Mapping):
        return ("o", frozenset((k, _canon(x)) for k, x in v.items()))
    if v is None:
        return ("z",)
    return ("?", repr(v))


def _echo(v: Any) -> str:
    return clip(json.dumps(v, default=str, ensure_ascii=True), 60)


def _noop(v: Any, path: str, out: list[str]) -> None:
    return None


def _never(v: Any, path: str, out: list[str]) -> None:
    out.append(f"{path or 'arguments'}: is not allowed")
    raise _Stop


def _compile(schema: Mapping[str, Any] | bool) -> Check:
    if schema is True:
        return _noop
    if schema is False:
        return _never
    assert isinstance(schema, Mapping)
    t = schema.get("type")
    types = [t] if isinstance(t, str) else list(t) if isinstance(t, list) else []
    if len(types) == 1 and (leaf := _leaf(types[0], schema)) is not None:
        return leaf
    checks = [_type_check(types)] if types else []
    checks += [c for build in _KEYWORD_CHECKS if (c := build(schema)) is not None]
    return _combine(checks, types)


def _combine(checks: list[Check], types: list[str]) -> Check:
    """One closure running ``checks`` in order, with no wrapper frame for the two commonest shapes."""
    if len(checks) == 1:
        return checks[0]
    if len(types) == 1 and len(checks) == 2:  # the usual object schema: its type, then its properties
        only_type, then = _TYPE_CHECKS[types[0]], checks[1]
        label = types[0]

        def typed(v: Any, path: str, out: list[str]) -> None:
            if not (isinstance(v, dict) if label == "object" else only_type(v)):
                out.append(f"{path or 'arguments'}: expected {label}, got {_kind(v)}")
                raise _Stop
            then(v, path, out)

        return typed

    def run_all(v: Any, path: str, out: list[str]) -> None:
        for c in checks:
            c(v, path, out)

    return run_all


def _type_check(types: list[str]) -> Check:
    fns = [_TYPE_CHECKS[x] for x in types]
    label = " or ".join(types)
    if len(fns) == 1:
        only = fns[0]

        def check_type(v: Any, path: str, out: list[str]) -> None:
            if not only(v):
                out.append(f"{path or 'arguments'}: expected {label}, got {_kind(v)}")
                raise _Stop

    else:

        def check_type(v: Any, path: str, out: list[str]) -> None:
            if not any(f(v) for f in fns):
                out.append(f"{path or 'arguments'}: expected {label}, got {_kind(v)}")
                raise _Stop

    return check_type


def _enum_check(schema: Mapping[str, Any]) -> Check | None:
    if "enum" not in schema:
        return None
    allowed = list(schema["enum"])
    keys = {_canon(a) for a in allowed}

    def check_enum(v: Any, path: str, out: list[str]) -> None:
        if _canon(v) not in keys:
            out.append(f"{path}: must be one of {clip(json.dumps(allowed), 200)}, got {_echo(v)}")

    return check_enum


def _const_check(schema: Mapping[str, Any]) -> Check | None:
    if "const" not in schema:
        return None
    const = schema["const"]
    const_key = _canon(const)

    def check_const(v: Any, path: str, out: list[str]) -> None:
        if _canon(v) != const_key:
            out.append(f"{path}: must be {clip(json.dumps(const), 200)}")

    return check_const


def _pattern_check(schema: Mapping[str, Any]) -> Check | None:
    if "pattern" not in schema:
        return None
    rx = js_pattern(schema["pattern"])
    raw = clip(schema["pattern"])

    def check_pattern(v: Any, path: str, out: list[str]) -> None:
        if isinstance(v, str) and not rx.search(v):
            out.append(f"{path}: does not match pattern {raw}")

    return check_pattern


def _format_check(schema: Mapping[str, Any]) -> Check | None:
    fmt = schema.get("format")
    if not (isinstance(fmt, str) and fmt in FORMAT_CHECKER.checkers):
        return None

    def check_format(v: Any, path: str, out: list[str]) -> None:
        if isinstance(v, str) and not FORMAT_CHECKER.conforms(v, fmt):
            out.append(f"{path}: is not a valid {fmt}")

    return check_format


def _bound_rule(key: str, op: Callable[[Any, Any], Any], word: str) -> Callable[[Mapping[str, Any]], Check | None]:
    return lambda schema: _bound(schema[key], op, word) if key in schema else None


def _length_rule(key: str, is_min: bool, items: bool) -> Callable[[Mapping[str, Any]], Check | None]:
    return lambda schema: _length(int(schema[key]), is_min, items) if key in schema else None


def _unique_check(schema: Mapping[str, Any]) -> Check | None:
    if schema.get("uniqueItems") is not True:
        return None

    def check_unique(v: Any, path: str, out: list[str]) -> None:
        if isinstance(v, list) and len({_canon(x) for x in v}) != len(v):
            out.append(f"{path}: items must be unique")

    return check_unique


def _items_check(schema: Mapping[str, Any]) -> Check | None:
    if "items" not in schema:
        return None
    item_check = _compile(schema["items"])

    def check_items(v: Any, path: str, out: list[str]) -> None:
        if isinstance(v, list):
            for i, x in enumerate(v):
                _run(item_check, x, f"{path}[{i}]", out)

    return check_items


def _object_check(schema: Mapping[str, Any]) -> Check | None:
    props = schema.get("properties")
    closed = schema.get("additionalProperties") is False
    if props is None and "required" not in schema and not closed:
        return None
    prop_checks = {k: _compile(s) for k, s in (props or {}).items()}
    required = list(schema.get("required", []))

    def check_object(v: Any, path: str, out: list[str]) -> None:
        if not isinstance(v, dict):
            return
        for r in required:
            if r not in v:
                out.append(f"{_join(path, r)}: is required")
        for k, x in v.items():
            pc = prop_checks.get(k)
            if pc is not None:  # a key of the schema: short, no need to clip it
                try:  # what _run does, without its frame (once per argument of every call)
                    pc(x, f"{path}.{k}" if path else k, out)
                except _Stop:
                    pass
            elif closed:
                out.append(f"{_join(path, k)}: is not an argument of this tool")

    return check_object


#: Keywords a leaf (``_leaf``) does not check: a schema with any of them takes the general path.
_NOT_LEAF = frozenset(
    {"enum", "const", "pattern", "format", "items", "properties", "required", "additionalProperties"}
    | {"minItems", "maxItems", "uniqueItems"}
)
_BOUND_RULES: tuple[tuple[str, Callable[[Any, Any], Any], str], ...] = (  # C functions: no frame per bound
    ("minimum", operator.ge, ">="),
    ("maximum", operator.le, "<="),
    ("exclusiveMinimum", operator.gt, ">"),
    ("exclusiveMaximum", operator.lt, "<"),
)
#: What the general path checks after the type, one builder per keyword, in the order of their messages.
_KEYWORD_CHECKS: tuple[Callable[[Mapping[str, Any]], Check | None], ...] = (
    _enum_check,
    _const_check,
    _pattern_check,
    _format_check,
    *(_bound_rule(key, op, word) for key, op, word in _BOUND_RULES),
    _length_rule("minLength", True, False),
    _length_rule("maxLength", False, False),
    _length_rule("minItems", True, True),
    _length_rule("maxItems", False, True),
    _unique_check,
    _items_check,
    _object_check,
)


def _leaf(t: str, schema: Mapping[str, Any]) -> Check | None:
    """One closure for the commonest argument schema: one scalar type, with bounds on a number or lengths on a
    string (what the general path checks in several closures, with the same messages in the same order: the
    type, then minimum, maximum, exclusiveMinimum, exclusiveMaximum, then minLength, maxLength). None for any
    other schema. Bounds only ever apply to numbers and lengths to strings, so each type keeps only its own."""
    if t not in ("string", "integer", "number", "boolean", "null") or not _NOT_LEAF.isdisjoint(schema):
        return None
    if t == "string":
        lo = int(schema["minLength"]) if "minLength" in schema else None
        hi = int(schema["maxLength"]) if "maxLength" in schema else None

        def string_leaf(v: Any, path: str, out: list[str]) -> None:
            if not isinstance(v, str):
                out.append(f"{path or 'arguments'}: expected string, got {_kind(v)}")
                raise _Stop
            if lo is not None and len(v) < lo:
                out.append(f"{path}: must have at least {lo} characters")
            if hi is not None and len(v) > hi:
                out.append(f"{path}: must have at most {hi} characters")

        return string_leaf
    only = _TYPE_CHECKS[t]
    numeric = t in ("integer", "number")
    bounds = [(schema[k], op, word) for k, op, word in _BOUND_RULES if k in schema] if numeric else []

    integer = t == "integer"

    def scalar_leaf(v: Any, path: str, out: list[str]) -> None:
        # the integer rule of _TYPE_CHECKS written out (the commonest number type, without the lambda's frame)
        if not (
            (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
            if integer
            else only(v)
        ):
            out.append(f"{path or 'arguments'}: expected {t}, got {_kind(v)}")
            raise _Stop
        for b, op, word in bounds:  # a value that passed integer or number is a number (never a bool)
            if not op(v, b):
                out.append(f"{path}: must be {word} {b:g}")

    return scalar_leaf


class _Stop(Exception):
    """A type mismatch ends checks on that value (the other messages would be noise)."""


def _run(check: Check, v: Any, path: str, out: list[str]) -> None:
    try:
        check(v, path, out)
    except _Stop:
        pass


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _bound(b: float, op: Callable[[Any, Any], bool], word: str) -> Check:
    def check(v: Any, path: str, out: list[str]) -> None:
        if _num(v) and not op(v, b):
            out.append(f"{path}: must be {word} {b:g}")

    return check


def _length(n: int, is_min: bool, items: bool) -> Check:
    unit = "items" if items else "characters"
    kind = list if items else str

    def check(v: Any, path: str, out: list[str]) -> None:
        if isinstance(v, kind):
            if is_min and len(v) < n:
                out.append(f"{path}: must have at least {n} {unit}")
            elif not is_min and len(v) > n:
                out.append(f"{path}: must have at most {n} {unit}")

    return check


def _join(path: str, key: str) -> str:
    key = clip(key, 40)
    return key if not path else f"{path}.{key}"


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(v), type(v).__name__)


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _fast_value_ok(key: str, v: Any) -> bool:
    """Keyword values the fast path handles exactly as the reference does (anything odd goes to the reference)."""
    if key == "type":
        names = [v] if isinstance(v, str) else v if isinstance(v, list) else None
        return bool(names) and all(isinstance(n, str) and n in _TYPES for n in names)  # type: ignore[union-attr]
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return _num(v)
    if key in ("minLength", "maxLength", "minItems", "maxItems"):
        return _is_count(v)
    if key == "required":
        return isinstance(v, list) and all(isinstance(r, str) for r in v)
    if key == "enum":
        return isinstance(v, list)
    if key == "pattern":
        if not isinstance(v, str):
            return False
        try:
            js_pattern(v)
        except re.error:
            return False
        return True
    if key == "format":
        return isinstance(v, str)
    if key in ("additionalProperties", "uniqueItems"):
        return isinstance(v, bool)
    if key == "properties":
        return isinstance(v, Mapping) and all(isinstance(k, str) and _uses_only_fast(s) for k, s in v.items())
    if key == "items":
        return _uses_only_fast(v)
    return True  # const, annotations


def _uses_only_fast(schema: Any) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping) or not set(schema) <= _FAST_KEYWORDS:
        return False
    return all(_fast_value_ok(k, v) for k, v in schema.items())
