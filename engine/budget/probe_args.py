"""Minimal valid arguments for a tool, generated from its JSON schema, so calibration can probe it.

Probing every tool with ``{}`` (what Glyphoxa does) fails every tool with required arguments and demotes it.
Here a probe fills exactly the required fields: the const, the first enum value, the default or first example
when declared, numbers inside their bounds (and on their ``multipleOf``), strings in their declared format, of
their declared length, or matching a simple pattern. Anything this cannot satisfy raises ``ProbeArgsError``
naming the path, and calibration then skips the tool instead of probing it with arguments it would reject.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from engine._compat.stdlib import re_parse

_MAX_DEPTH = 24

_FORMAT_EXAMPLES: dict[str, str] = {
    "email": "probe@example.com",
    "idn-email": "probe@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "date": "2024-01-01",
    "date-time": "2024-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "duration": "PT1S",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "phone": "+15555550100",
    "regex": ".*",
    "json-pointer": "/",
}


class ProbeArgsError(ValueError):
    """No valid arguments could be generated; the message says where and why."""


def minimal_args(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The smallest arguments object that satisfies ``schema`` (an object schema)."""
    value = _Gen(schema).value(schema, "arguments", 0)
    if not isinstance(value, dict):
        raise ProbeArgsError(f"arguments: the schema describes {type(value).__name__}, not an object")
    return value


_NOTHING = object()


def _given(schema: Mapping[str, Any], path: str) -> Any:
    """The value the schema names itself (const, the first enum value, default, the first example), else _NOTHING."""
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list):
        if not schema["enum"]:
            raise ProbeArgsError(f"{path}: enum is empty")
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    return _NOTHING


class _Gen:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def resolve(self, schema: Mapping[str, Any], path: str) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            return schema
        if not ref.startswith("#"):
            raise ProbeArgsError(f"{path}: external $ref {ref!r} is not supported")
        node: Any = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise ProbeArgsError(f"{path}: $ref {ref!r} does not resolve")
            node = node[part]
        if not isinstance(node, Mapping):
            raise ProbeArgsError(f"{path}: $ref {ref!r} is not a schema")
        merged = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
        return merged

    def value(self, schema: Any, path: str, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise ProbeArgsError(f"{path}: schema nests deeper than {_MAX_DEPTH} levels (recursive $ref?)")
        if schema is True or schema == {}:
            return ""
        if schema is False:
            raise ProbeArgsError(f"{path}: the schema accepts no value")
        if not isinstance(schema, Mapping):
            raise ProbeArgsError(f"{path}: schema must be an object, got {type(schema).__name__}")
        schema = self.resolve(schema, path)
        if "allOf" in schema:
            schema = _merge_all_of(schema, path)
        if (given := _given(schema, path)) is not _NOTHING:
            return given
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                non_null = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
                return self.value((non_null or options)[0], path, depth + 1)
        return self.of_kind(schema, path, depth)

    def of_kind(self, schema: Mapping[str, Any], path: str, depth: int) -> Any:
        """The smallest value of the schema's type (None for null or no type)."""
        kind = _kind(schema, path)
        if kind == "object":
            return self.obj(schema, path, depth)
        if kind == "array":
            return self.array(schema, path, depth)
        if kind == "string":
            return _string(schema, path)
        if kind in ("integer", "number"):
            return _number(schema, path, kind == "integer")
        if kind == "boolean":
            return False
        return None

    def obj(self, schema: Mapping[str, Any], path: str, depth: int) -> dict[str, Any]:
        props = schema.get("properties") or {}
        required = list(schema.get("required") or [])
        min_props = int(schema.get("minProperties") or 0)
        names = required + [n for n in props if n not in required][: max(0, min_props - len(required))]
        out: dict[str, Any] = {}
        for name in names:
            sub = props.get(name)
            if sub is None:
                extra = schema.get("additionalProperties", True)
                if extra is False:
                    raise ProbeArgsError(f"{path}.{name}: required but not declared, and no other keys allowed")
                sub = extra if isinstance(extra, Mapping) else {}
            out[name] = self.value(sub, f"{path}.{name}", depth + 1)
        return out

    def array(self, schema: Mapping[str, Any], path: str, depth: int) -> list[Any]:
        prefix = schema.get("prefixItems")
        out: list[Any] = []
        if isinstance(prefix, list):
            out = [self.value(s, f"{path}[{i}]", depth + 1) for i, s in enumerate(prefix)]
        n = int(schema.get("minItems") or 0)
        items = schema.get("items", {})
        while len(out) < n:
            out.append(self.value(items, f"{path}[{len(out)}]", depth + 1))
        if schema.get("uniqueItems") and len({repr(x) for x in out}) != len(out):
            raise ProbeArgsError(f"{path}: needs {n} distinct items, which cannot be generated simply")
        return out


def _merge_all_of(schema: Mapping[str, Any], path: str) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        if not isinstance(part, Mapping):
            raise ProbeArgsError(f"{path}: allOf entries must be schemas")
        for k, v in part.items():
            if k == "properties":
                merged["properties"] = {**merged.get("properties", {}), **v}
            elif k == "required":
                merged["required"] = [*merged.get("required", []), *v]
            else:
                merged.setdefault(k, v)
    return merged


def _kind(schema: Mapping[str, Any], path: str) -> str | None:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), t[0] if t else None)
    if isinstance(t, str):
        return t
    if t is not None:
        raise ProbeArgsError(f"{path}: 'type' must be a string or a list, got {t!r}")
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return "string"


def _number(schema: Mapping[str, Any], path: str, integer: bool) -> int | float:
    lo: float | None = None
    hi: float | None = None
    step = 1.0 if integer else 0.5
    if isinstance(schema.get("minimum"), int | float):
        lo = float(schema["minimum"])
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        e = float(schema["exclusiveMinimum"])
        cand = math.floor(e) + 1 if integer else e + step
        lo = cand if lo is None else max(lo, cand)
    if isinstance(schema.get("maximum"), int | float):
        hi = float(schema["maximum"])
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        e = float(schema["exclusiveMaximum"])
        cand = math.ceil(e) - 1 if integer else e - step
        if not integer and lo is not None and cand < lo < e:
            cand = lo
        hi = cand if hi is None else min(hi, cand)
    if integer and lo is not None:
        lo = float(math.ceil(lo))
    if integer and hi is not None:
        hi = float(math.floor(hi))
    value = 0.0
    if lo is not None and value < lo:
        value = lo
    if hi is not None and value > hi:
        value = hi
    mult = schema.get("multipleOf")
    if isinstance(mult, int | float) and mult > 0 and value % mult:
        value = math.ceil(value / mult) * mult
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ProbeArgsError(f"{path}: no number fits the bounds (min {lo}, max {hi}, multipleOf {mult})")
    return int(value) if integer else value


def _string(schema: Mapping[str, Any], path: str) -> str:
    min_len = int(schema.get("minLength") or 0)
    max_len = schema.get("maxLength")
    fmt = schema.get("format")
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        rx = re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))
        for s in _from_pattern(pattern, path):
            if rx.search(s) and len(s) >= min_len and (max_len is None or len(s) <= max_len):
                return s
        raise ProbeArgsError(f"{path}: could not build a string matching pattern {pattern!r} within its length")
    if isinstance(fmt, str) and fmt in _FORMAT_EXAMPLES:
        s = _FORMAT_EXAMPLES[fmt]
    else:
        s = "test"
    if len(s) < min_len:
        s = s + "x" * (min_len - len(s))
    if isinstance(max_len, int) and len(s) > max_len:
        if fmt in _FORMAT_EXAMPLES:
            raise ProbeArgsError(f"{path}: a {fmt} cannot fit in maxLength {max_len}")
        s = s[:max_len]
    return s


# --------------------------------------------------------------------------------------- simple patterns

_CATEGORY_CHARS = {
    "CATEGORY_DIGIT": "0",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_WORD": "a",
    "CATEGORY_NOT_WORD": "-",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": "a",
}
_CANDIDATES = "a0A_-. xZ9"


def _from_pattern(pattern: str, path: str) -> list[str]:
    """A few candidate strings for a simple pattern: each repeat at its minimum, then a little above it."""
    try:
        parsed = re_parse(pattern)
    except re.error as e:
        raise ProbeArgsError(f"{path}: pattern {pattern!r} is not a valid regular expression: {e}") from e
    out: list[str] = []
    for extra in (0, 1, 2, 4, 8, 16, 64):
        try:
            s = _emit(list(parsed), extra)
        except _Unsupported as e:
            raise ProbeArgsError(f"{path}: pattern {pattern!r} is too complex to satisfy ({e})") from e
        if s not in out:
            out.append(s)
    return out


class _Unsupported(Exception):
    pass


def _emit(items: list[Any], extra: int) -> str:
    parts: list[str] = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            parts.append(chr(av))
        elif name == "NOT_LITERAL":
            parts.append("a" if chr(av) != "a" else "b")
        elif name == "ANY":
            parts.append("a")
        elif name == "IN":
            parts.append(_in_char(av))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            n = lo + extra if hi is None or str(hi) == "MAXREPEAT" else min(hi, lo + extra)
            parts.append(_emit(list(sub), 0) * n)
        elif name == "SUBPATTERN":
            parts.append(_emit(list(av[-1]), extra))
        elif name == "ATOMIC_GROUP":
            parts.append(_emit(list(av), extra))
        elif name == "BRANCH":
            parts.append(_emit(list(av[1][0]), extra))
        elif name == "AT":
            continue
        else:
            raise _Unsupported(name.lower())
    return "".join(parts)


def _in_char(items: list[Any]) -> str:
    negate = any(str(op) == "NEGATE" for op, _ in items)
    if not negate:
        op, av = items[0]
        name = str(op)
        if name == "LITERAL":
            return chr(av)
        if name == "RANGE":
            return chr(av[0])
        if name == "CATEGORY" and str(av) in _CATEGORY_CHARS:
            return _CATEGORY_CHARS[str(av)]
        raise _Unsupported(f"character class item {name.lower()}")
    for c in _CANDIDATES:
        if not any(_class_item_matches(op, av, c) for op, av in items if str(op) != "NEGATE"):
            return c
    raise _Unsupported("negated character class")


def _class_item_matches(op: Any, av: Any, c: str) -> bool:
    name = str(op)
    if name == "LITERAL":
        return bool(chr(av) == c)
    if name == "RANGE":
        return bool(av[0] <= ord(c) <= av[1])
    if name == "CATEGORY":
        cat = str(av)
        probe = {
            "CATEGORY_DIGIT": r"\d",
            "CATEGORY_NOT_DIGIT": r"\D",
            "CATEGORY_WORD": r"\w",
            "CATEGORY_NOT_WORD": r"\W",
            "CATEGORY_SPACE": r"\s",
            "CATEGORY_NOT_SPACE": r"\S",
        }.get(cat)
        if probe is None:
            raise _Unsupported(f"category {cat.lower()}")
        return re.fullmatch(probe, c) is not None
    raise _Unsupported(f"character class item {name.lower()}")
