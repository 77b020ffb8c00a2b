"""The tool inspector's "call this tool" form, apart from the widgets: fields from a tool's JSON input schema, and
the typed text turned back into arguments, validated before the call.

Each property becomes one field: a string, number or integer an input (an ``enum`` a choice), a boolean a choice
of true/false, an array of those a comma-separated input (or a JSON array), anything else (nested objects, mixed
types) JSON text. ``collect`` names every field that is wrong and why; the engine validates the call again against
the full schema on its one execution path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PRIMITIVES = ("string", "number", "integer", "boolean")


@dataclass(frozen=True)
class FieldSpec:
    """One argument's field: ``kind`` is a primitive, "array" (of ``item``) or "json"."""

    name: str
    kind: str
    required: bool = False
    description: str = ""
    enum: tuple[Any, ...] = ()
    item: str = ""
    default: Any = None
    schema: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def hint(self) -> str:
        """What to type, for the placeholder."""
        if self.kind == "array":
            return f"{self.item}, {self.item}, … (comma-separated, or a JSON array)"
        if self.kind == "json":
            return "JSON"
        return self.kind


def _unwrap(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``anyOf: [X, {type: null}]`` (an optional X, as pydantic writes it) read as X."""
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            real = [b for b in branches if isinstance(b, Mapping) and b.get("type") != "null"]
            if len(real) == 1:
                return {**{k: v for k, v in schema.items() if k != key}, **real[0]}
    return schema


def _type_of(schema: Mapping[str, Any]) -> str:
    schema = _unwrap(schema)
    t = schema.get("type")
    if isinstance(t, list):  # ["string", "null"]: the non-null one when there is exactly one
        rest = [x for x in t if x != "null"]
        t = rest[0] if len(rest) == 1 else None
    if t is None and "enum" in schema:
        values = schema["enum"]
        if values and all(isinstance(v, str) for v in values):
            return "string"
    return str(t) if isinstance(t, str) else "json"


def fields_for(schema: Mapping[str, Any]) -> list[FieldSpec]:
    """The fields of a tool's input schema (an object schema), required ones first, each in schema order."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    out: list[FieldSpec] = []
    for name, raw in props.items():
        prop: Mapping[str, Any] = _unwrap(raw) if isinstance(raw, Mapping) else {}
        kind, item = _type_of(prop), ""
        if kind == "array":
            items = prop.get("items")
            item = _type_of(items) if isinstance(items, Mapping) else "json"
            if item not in PRIMITIVES:
                kind, item = "json", ""
        elif kind not in PRIMITIVES:
            kind = "json"
        enum = tuple(prop.get("enum") or ())
        out.append(
            FieldSpec(
                name=str(name),
                kind=kind,
                required=name in required,
                description=str(prop.get("description") or ""),
                enum=enum,
                item=item,
                default=prop.get("default"),
                schema=prop,
            )
        )
    return sorted(out, key=lambda f: not f.required)


class FieldError(ValueError):
    """Why one field's text is not a valid value."""


def _primitive(kind: str, text: str, enum: tuple[Any, ...] = ()) -> Any:
    t = text.strip()
    value: Any
    if kind == "string":
        value = text
    elif kind == "integer":
        try:
            value = int(t)
        except ValueError:
            raise FieldError(f"{t!r} is not a whole number") from None
    elif kind == "number":
        try:
            value = float(t) if any(c in t for c in ".eE") else int(t)
        except ValueError:
            raise FieldError(f"{t!r} is not a number") from None
    elif kind == "boolean":
        if t.lower() not in ("true", "false"):
            raise FieldError(f"{t!r} is not true or false")
        value = t.lower() == "true"
    else:
        raise FieldError(f"cannot read a {kind}")
    if enum and value not in enum:
        raise FieldError(f"must be one of {', '.join(map(str, enum))}")
    return value


def parse_value(spec: FieldSpec, text: str) -> Any:
    """The argument value for ``text`` (``FieldError`` saying why not)."""
    if spec.kind in PRIMITIVES:
        return _primitive(spec.kind, text, spec.enum)
    if spec.kind == "array":
        t = text.strip()
        if t.startswith("["):
            try:
                items = json.loads(t)
            except json.JSONDecodeError as e:
                raise FieldError(f"not a JSON array: {e.msg} (column {e.colno})") from None
            if not isinstance(items, list):
                raise FieldError("not a JSON array")
            return [_primitive(spec.item, json.dumps(v) if spec.item != "string" else str(v)) for v in items]
        parts = [p.strip() for p in t.split(",")] if t else []
        out = []
        for i, part in enumerate(parts):
            try:
                out.append(_primitive(spec.item, part))
            except FieldError as e:
                raise FieldError(f"item {i + 1}: {e}") from None
        return out
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise FieldError(f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None


def collect(specs: list[FieldSpec], texts: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """(arguments, {field: problem}): empty optional fields are left out, an empty required one is a problem."""
    args: dict[str, Any] = {}
    problems: dict[str, str] = {}
    for spec in specs:
        text = texts.get(spec.name, "")
        if not text.strip() and not (spec.kind == "string" and text):
            if spec.required:
                problems[spec.name] = "required"
            continue
        try:
            args[spec.name] = parse_value(spec, text)
        except FieldError as e:
            problems[spec.name] = str(e)
    return args, problems


def initial_text(spec: FieldSpec) -> str:
    """The field's starting text: the schema's default, written as the field reads it back."""
    if spec.default is None:
        return ""
    if spec.kind == "string":
        return str(spec.default)
    if spec.kind == "array" and isinstance(spec.default, list):
        return ", ".join(json.dumps(v) if spec.item != "string" else str(v) for v in spec.default)
    return json.dumps(spec.default)
