"""Argument validation for tool calls: every violation named, formats anchored on the whole value.

Validators are compiled once per schema into small closures, which keeps the common case (flat object schemas
with typed, enum, pattern and format constraints) to a few microseconds. Schemas using keywords outside that
subset (``$ref``, ``anyOf``, ``if`` …) are validated by the ``jsonschema`` library instead, so MCP tools with rich
schemas are still checked exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

Check = Callable[[Any, str, list[str]], None]

_FAST_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "items",
        "minItems",
        "maxItems",
        "description",
        "default",
        "title",
        "examples",
        "$schema",
        "uniqueItems",
    }
)

_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")
_PHONE = re.compile(r"\+?[0-9][0-9 ().\-]{4,22}[0-9]")


def _is_url(v: str) -> bool:
    if any(c.isspace() for c in v):
        return False
    parts = urlsplit(v)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


FORMATS: dict[str, Callable[[str], bool]] = {
    "email": lambda v: _EMAIL.fullmatch(v) is not None,
    "uri": _is_url,
    "url": _is_url,
    "phone": lambda v: _PHONE.fullmatch(v) is not None,
}


class ArgumentError(ValueError):
    """Arguments that do not fit the tool's schema; ``problems`` names every violation."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def parse_arguments(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Arguments arrive as a JSON string (OpenAI, Deepgram) or an object; malformed JSON raises ArgumentError."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ArgumentError(
            [f"arguments are not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"]
        ) from e
    if not isinstance(value, dict):
        raise ArgumentError([f"arguments must be a JSON object, got {type(value).__name__}"])
    return value


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _js_pattern(p: str) -> re.Pattern[str]:
    # ECMA-262 '$' (no multiline) matches only at the very end; Python's also before a trailing newline.
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", p))


def _compile(schema: Mapping[str, Any]) -> Check:
    checks: list[Check] = []
    t = schema.get("type")
    types = [t] if isinstance(t, str) else list(t) if isinstance(t, list) else []
    if types:
        fns = [_TYPE_CHECKS[x] for x in types if x in _TYPE_CHECKS]
        label = " or ".join(types)

        def check_type(v: Any, path: str, out: list[str]) -> None:
            if not any(f(v) for f in fns):
                out.append(f"{path}: expected {label}, got {_kind(v)}")
                raise _Stop

        checks.append(check_type)
    if "enum" in schema:
        allowed = list(schema["enum"])

        def check_enum(v: Any, path: str, out: list[str]) -> None:
            if not any((v == a and type(v) is type(a)) or (_num(v) and _num(a) and v == a) for a in allowed):
                out.append(f"{path}: must be one of {json.dumps(allowed)}, got {json.dumps(v, default=str)}")

        checks.append(check_enum)
    if "const" in schema:
        const = schema["const"]

        def check_const(v: Any, path: str, out: list[str]) -> None:
            if v != const:
                out.append(f"{path}: must be {json.dumps(const)}")

        checks.append(check_const)
    if "pattern" in schema:
        rx = _js_pattern(schema["pattern"])
        raw = schema["pattern"]

        def check_pattern(v: Any, path: str, out: list[str]) -> None:
            if isinstance(v, str) and not rx.search(v):
                out.append(f"{path}: does not match pattern {raw}")

        checks.append(check_pattern)
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in FORMATS:
        fmt_fn = FORMATS[fmt]

        def check_format(v: Any, path: str, out: list[str]) -> None:
            if isinstance(v, str) and not fmt_fn(v):
                out.append(f"{path}: is not a valid {fmt}")

        checks.append(check_format)
    for key, op, word in (
        ("minimum", lambda v, b: v >= b, ">="),
        ("maximum", lambda v, b: v <= b, "<="),
        ("exclusiveMinimum", lambda v, b: v > b, ">"),
        ("exclusiveMaximum", lambda v, b: v < b, "<"),
    ):
        if isinstance(schema.get(key), int | float) and not isinstance(schema.get(key), bool):
            checks.append(_bound(schema[key], op, word))
    for key, is_min in (("minLength", True), ("maxLength", False), ("minItems", True), ("maxItems", False)):
        if key in schema:
            checks.append(_length(int(schema[key]), is_min, key.endswith("Items")))
    if "items" in schema and isinstance(schema["items"], Mapping):
        item_check = _compile(schema["items"])

        def check_items(v: Any, path: str, out: list[str]) -> None:
            if isinstance(v, list):
                for i, x in enumerate(v):
                    _run(item_check, x, f"{path}[{i}]", out)

        checks.append(check_items)
    props = schema.get("properties")
    if isinstance(props, Mapping) or "required" in schema or schema.get("additionalProperties") is False:
        prop_checks = {k: _compile(s) for k, s in (props or {}).items() if isinstance(s, Mapping)}
        required = list(schema.get("required", []))
        closed = schema.get("additionalProperties") is False

        def check_object(v: Any, path: str, out: list[str]) -> None:
            if not isinstance(v, dict):
                return
            for r in required:
                if r not in v:
                    out.append(f"{_join(path, r)}: is required")
            for k, x in v.items():
                pc = prop_checks.get(k)
                if pc is not None:
                    if x is None and k not in required:
                        continue  # an optional argument sent as null means "not given"
                    _run(pc, x, _join(path, k), out)
                elif closed:
                    out.append(f"{_join(path, k)}: is not an argument of this tool")

        checks.append(check_object)

    def run_all(v: Any, path: str, out: list[str]) -> None:
        for c in checks:
            c(v, path, out)

    return run_all


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

    def check(v: Any, path: str, out: list[str]) -> None:
        if isinstance(v, list | str):
            if is_min and len(v) < n:
                out.append(f"{path}: must have at least {n} {unit}")
            elif not is_min and len(v) > n:
                out.append(f"{path}: must have at most {n} {unit}")

    return check


def _join(path: str, key: str) -> str:
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


def _uses_only_fast(schema: Any) -> bool:
    if isinstance(schema, Mapping):
        if not set(schema) <= _FAST_KEYWORDS:
            return False
        ap = schema.get("additionalProperties")
        if ap is not None and not isinstance(ap, bool):
            return False
        props = schema.get("properties", {})
        return all(_uses_only_fast(s) for s in props.values()) and (
            "items" not in schema or _uses_only_fast(schema["items"])
        )
    return isinstance(schema, bool)


class ArgumentValidator:
    """Validates one tool's arguments; build once per schema (see ``validator_for``)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self._fast: Check | None = _compile(schema) if _uses_only_fast(schema) else None
        self._full: Any = None
        if self._fast is None:
            from jsonschema import Draft202012Validator, FormatChecker

            checker = FormatChecker()
            for name, fn in FORMATS.items():
                checker.checks(name)(lambda v, fn=fn: not isinstance(v, str) or fn(v))
            self._full = Draft202012Validator(dict(schema), format_checker=checker)

    def problems(self, args: Mapping[str, Any]) -> list[str]:
        out: list[str] = []
        if self._fast is not None:
            _run(self._fast, args, "", out)
            return out
        for err in sorted(self._full.iter_errors(dict(args)), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(p) for p in err.absolute_path) or "arguments"
            out.append(f"{where}: {err.message}")
        return out

    def validate(self, args: Mapping[str, Any]) -> None:
        problems = self.problems(args)
        if problems:
            raise ArgumentError(problems)


@lru_cache(maxsize=4096)
def _cached(schema_json: str) -> ArgumentValidator:
    return ArgumentValidator(json.loads(schema_json))


def validator_for(schema: Mapping[str, Any]) -> ArgumentValidator:
    return _cached(json.dumps(schema, sort_keys=True, default=str))
