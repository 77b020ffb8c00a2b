"""OpenAI strict mode (Structured Outputs for function arguments): render exactly within the subset, or refuse.

Strict mode needs every object closed (``additionalProperties: false``) with every property required; optional
properties become nullable instead (reference/wire-formats.md §1.5, the SDK's ``_ensure_strict_json_schema``).
OpenAI documents a subset of JSON Schema for it (types, ``properties``/``required``/``items``, ``enum``/``const``,
non-root ``anyOf``, ``$defs``/``$ref`` with recursion, string ``pattern`` and nine ``format`` values, number
bounds, ``minItems``/``maxItems``) and limits (10 nesting levels, 1,000 enum values, 5,000 properties, 120,000
characters of names and values). A schema is rendered only when the result means exactly what the tool accepts
(annotations such as ``default`` or ``examples`` may go); anything else — a keyword outside the subset, an
untyped subschema, a free-form object or ``patternProperties`` map that strict mode would narrow to ``{}``, a
limit exceeded — raises ``NotStrictable`` and the renderer sends that one tool non-strict, with the reason as a
note. The nulls the model then sends for optional arguments are removed again by ``strip_added_nulls``.
"""

from __future__ import annotations

from typing import Any

from engine.providers.rendering.nulls import strip_added_nulls
from engine.providers.rendering.schemas import Notes, Schema, SchemaError, resolve_ref

__all__ = ["MAX_DEPTH", "MAX_ENUM_VALUES", "NotStrictable", "strict_schema", "strip_added_nulls"]

MAX_DEPTH = 10
MAX_ENUM_VALUES = 1000
MAX_PROPERTIES = 5000
MAX_STRING_CHARS = 120_000
FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
#: Keywords the subset supports (``anyOf`` only below the root; ``oneOf``/``allOf`` are rewritten first).
SUPPORTED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    }
)
#: Annotations: dropping them changes nothing a value must satisfy.
ANNOTATIONS = frozenset(
    {"default", "examples", "example", "$schema", "$id", "$comment", "deprecated", "readOnly", "writeOnly"}
)
TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


class NotStrictable(ValueError):
    """This schema cannot be expressed in OpenAI strict mode (the message says why and where)."""


def strict_schema(schema: Schema, notes: Notes) -> Schema:
    """The strict-mode form of an object-root schema (``$defs``/``$ref`` kept: strict mode supports them)."""
    root = schema
    if isinstance(schema.get("$ref"), str):  # a root reference: the root must be the object itself
        raise NotStrictable("root is a $ref (resolve it first: schemas.resolve_root_ref)")
    if "allOf" in schema:
        schema = _merge_all_of(schema, root, "", notes)
    if any(k in schema for k in ("anyOf", "oneOf")):
        raise NotStrictable("root is anyOf/oneOf")
    w = _Walk(root, notes)
    out = w.node(schema, "", 0)
    if w.dropped:
        notes.append("strict: dropped annotations " + ", ".join(sorted(w.dropped)))
    if w.enum_values > MAX_ENUM_VALUES:
        raise NotStrictable(f"{w.enum_values} enum values (strict mode allows {MAX_ENUM_VALUES})")
    if w.properties > MAX_PROPERTIES:
        raise NotStrictable(f"{w.properties} properties (strict mode allows {MAX_PROPERTIES})")
    if w.chars > MAX_STRING_CHARS:
        raise NotStrictable(f"{w.chars} characters of names and values (strict mode allows {MAX_STRING_CHARS})")
    return out


def _inline_ref(node: Schema, root: Schema, where: str) -> Schema:
    try:
        target = resolve_ref(root, node["$ref"], where)
    except SchemaError as e:
        raise NotStrictable(str(e)) from e
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _merge_all_of(node: Schema, root: Schema, path: str, notes: Notes) -> Schema:
    """``allOf`` of object schemas as one object, when that is exactly the same constraint."""
    where = path or "/"
    parts = node["allOf"]
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        raise NotStrictable(f"{where}: allOf with non-schema parts")
    merged: Schema = {k: v for k, v in node.items() if k != "allOf"}
    for p in parts:
        if isinstance(p.get("$ref"), str):
            p = _inline_ref(p, root, where)
        if "allOf" in p:
            p = _merge_all_of(p, root, path, notes)
        if "additionalProperties" in p and len(parts) > 1:
            raise NotStrictable(f"{where}: allOf part with additionalProperties (merging would change it)")
        for k, v in p.items():
            if k == "properties" and isinstance(v, dict):
                props = merged.setdefault("properties", {})
                for name, sub in v.items():
                    if name in props and props[name] != sub:
                        raise NotStrictable(f"{where}: allOf parts disagree on property {name!r}")
                    props[name] = sub
            elif k == "required" and isinstance(v, list):
                merged["required"] = list(dict.fromkeys([*merged.get("required", []), *v]))
            elif k in ANNOTATIONS or k in ("description", "title"):
                merged.setdefault(k, v)
            elif k in merged and merged[k] != v:
                raise NotStrictable(f"{where}: allOf parts disagree on {k!r}")
            else:
                merged[k] = v
    notes.append(f"strict: merged allOf at {where}")
    return merged


def _is_typed(node: Schema) -> bool:
    return any(k in node for k in ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"))


def _types(node: Schema) -> set[str]:
    t = node.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    return set()


def _check_subset(node: Schema, where: str) -> None:
    """Refuse a node with a keyword, a type or a format outside the strict subset, or no type at all."""
    unsupported = sorted(k for k in node if k not in SUPPORTED)
    if unsupported:
        raise NotStrictable(f"{where}: {', '.join(unsupported)} outside the strict subset")
    if not _is_typed(node):
        raise NotStrictable(f"{where}: untyped subschema")
    bad_types = _types(node) - TYPES
    if bad_types or ("type" in node and not _types(node)):
        raise NotStrictable(f"{where}: unknown type {node.get('type')!r}")
    if "format" in node and node["format"] not in FORMATS:
        raise NotStrictable(f"{where}: format {node['format']!r} outside the strict subset")


class _Walk:
    """One pass over a schema: checks the subset and limits, closes objects, makes optional properties nullable."""

    def __init__(self, root: Schema, notes: Notes) -> None:
        self.root = root
        self.notes = notes
        self.dropped: set[str] = set()
        self.enum_values = 0
        self.properties = 0
        self.chars = 0

    def node(self, node: Schema, path: str, depth: int) -> Schema:
        where = path or "/"
        node = self._rewritten(node, path)
        _check_subset(node, where)
        self._count_values(node)
        types = _types(node)
        if "object" in types or "properties" in node:
            depth += 1
            if depth > MAX_DEPTH:
                raise NotStrictable(f"{where}: nested deeper than {MAX_DEPTH} levels")
            node = self._object(node, path, depth)
        self._subschemas(node, path, depth, types)
        return node

    def _rewritten(self, node: Schema, path: str) -> Schema:
        """A copy with allOf merged, a $ref with siblings inlined, oneOf as anyOf and annotations dropped."""
        where = path or "/"
        if "allOf" in node:
            node = _merge_all_of(node, self.root, path, self.notes)
        node = dict(node)
        if isinstance(node.get("$ref"), str) and len(node) > 1:
            # A $ref with siblings: inlined one level (as the SDK's normaliser does).
            node = _inline_ref(node, self.root, where)
            if "allOf" in node:
                node = _merge_all_of(node, self.root, path, self.notes)
        if "oneOf" in node:
            if "anyOf" in node:
                raise NotStrictable(f"{where}: both oneOf and anyOf")
            node["anyOf"] = node.pop("oneOf")
            self.notes.append(f"strict: oneOf as anyOf at {where}")
        for k in [k for k in node if k in ANNOTATIONS]:
            self.dropped.add(k)
            node.pop(k)
        return node

    def _subschemas(self, node: Schema, path: str, depth: int, types: set[str]) -> None:
        """Items, anyOf branches and definitions walked in place (an array must have an items schema)."""
        where = path or "/"
        if "array" in types:
            items = node.get("items")
            if not isinstance(items, dict):
                raise NotStrictable(f"{where}: array without an items schema")
            node["items"] = self.node(items, f"{path}/items", depth)
        elif "items" in node and isinstance(node["items"], dict):
            node["items"] = self.node(node["items"], f"{path}/items", depth)
        if "anyOf" in node:
            branches = node["anyOf"]
            if not isinstance(branches, list) or not all(isinstance(b, dict) for b in branches):
                raise NotStrictable(f"{where}: anyOf with non-schema branches")
            node["anyOf"] = [self.node(b, f"{path}/anyOf/{i}", depth) for i, b in enumerate(branches)]
        for key in ("$defs", "definitions"):
            if isinstance(node.get(key), dict):
                node[key] = {
                    n: self.node(s, f"{path}/{key}/{n}", 0) if isinstance(s, dict) else s for n, s in node[key].items()
                }
                self.chars += sum(len(n) for n in node[key])

    def _count_values(self, node: Schema) -> None:
        if isinstance(node.get("enum"), list):
            self.enum_values += len(node["enum"])
            self.chars += sum(len(v) for v in node["enum"] if isinstance(v, str))
        if isinstance(node.get("const"), str):
            self.chars += len(node["const"])

    def _object(self, node: Schema, path: str, depth: int) -> Schema:
        where = path or "/"
        if "patternProperties" in node:
            raise NotStrictable(f"{where}: patternProperties map cannot be strict")
        extra = node.get("additionalProperties")
        props = node.get("properties")
        if props is not None and not isinstance(props, dict):
            raise NotStrictable(f"{where}: properties is not a mapping")
        props = props or {}
        if extra is not None and extra is not False:
            raise NotStrictable(f"{where}: free-form object (additionalProperties) cannot be strict")
        if not props and extra is None and path:
            raise NotStrictable(f"{where}: free-form object (no properties) cannot be strict")
        required = {r for r in node.get("required") or [] if isinstance(r, str)}
        unknown = sorted(required - set(props))
        if unknown:
            raise NotStrictable(f"{where}: required names {unknown} not in properties")
        new_props: dict[str, Any] = {}
        for name, sub in props.items():
            if not isinstance(sub, dict):
                raise NotStrictable(f"{where}/properties/{name}: not a schema")
            self.properties += 1
            self.chars += len(name)
            done = self.node(sub, f"{path}/properties/{name}", depth)
            new_props[name] = done if name in required else _nullable(done)
        node["properties"] = new_props
        node["required"] = list(new_props)
        node["additionalProperties"] = False
        if "type" not in node:
            node["type"] = "object"
        return node


def _nullable(sub: Schema) -> Schema:
    t = sub.get("type")
    out = dict(sub)
    if "$ref" in out or ("type" not in out and "anyOf" not in out):  # a reference, or enum/const alone
        if "enum" in out and "type" not in out:
            if None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
            return out
        return {"anyOf": [out, {"type": "null"}]}
    if isinstance(t, str):
        if t == "null":
            return out
        out["type"] = [t, "null"]
    elif isinstance(t, list):
        if "null" not in t:
            out["type"] = [*t, "null"]
    elif "anyOf" in out:
        if not any(b.get("type") == "null" for b in out["anyOf"]):
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        return out
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    if "const" in out:
        return {"anyOf": [sub, {"type": "null"}]}
    return out
