"""JSON Schema plumbing shared by every provider profile: walking subschemas, inlining ``$ref``, vendor keys.

Tool schemas arrive as whatever an MCP server (or a Python declaration) produced: draft-07 or 2020-12, with
``$defs``/``definitions`` and ``$ref``, ``x-*`` vendor keys, roots without ``type``. Providers accept different
subsets. The profiles (``profiles.py``) are built from the small, pure transformations here; each transformation
reports what it changed as a note so the renderer can log it once per tool. Inputs are never mutated.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

Schema = dict[str, Any]
Notes = list[str]

#: Keywords whose value is one subschema.
SINGLE = (
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalProperties",
    "items",
)
#: Keywords whose value is a list of subschemas.
LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
#: Keywords whose value maps names to subschemas.
MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")

REF_DEPTH = 3  # how many times a recursive $ref is unrolled before it is cut


class SchemaError(ValueError):
    """A schema that cannot be rendered (a broken ``$ref``); says where."""


def map_subschemas(schema: Schema, fn: Callable[[Schema, str], Any], path: str = "") -> Schema:
    """A copy of ``schema`` with ``fn(subschema, path)`` applied to each direct subschema (not recursive)."""
    out: Schema = {}
    for key, value in schema.items():
        if key in SINGLE and isinstance(value, dict):
            out[key] = fn(value, f"{path}/{key}")
        elif key == "items" and isinstance(value, list):  # draft-04 tuple form
            out[key] = [fn(v, f"{path}/items/{i}") if isinstance(v, dict) else v for i, v in enumerate(value)]
        elif key in LISTS and isinstance(value, list):
            out[key] = [fn(v, f"{path}/{key}/{i}") if isinstance(v, dict) else v for i, v in enumerate(value)]
        elif key in MAPS and isinstance(value, dict):
            out[key] = {k: fn(v, f"{path}/{key}/{k}") if isinstance(v, dict) else v for k, v in value.items()}
        else:
            out[key] = value
    return out


def walk(schema: Schema, fn: Callable[[Schema, str], Schema], path: str = "") -> Schema:
    """Apply ``fn`` bottom-up to every subschema (children first, then the node itself)."""

    def rec(node: Schema, p: str) -> Any:
        return fn(map_subschemas(node, rec, p), p)

    return rec(schema, path)


def resolve_ref(root: Schema, ref: str, where: str) -> Schema:
    """The subschema a local ``$ref`` points at in ``root`` (``SchemaError`` naming ``where`` otherwise)."""
    if not ref.startswith("#"):
        raise SchemaError(f"{where}: only local $ref is supported, got {ref!r}")
    node: Any = root
    for raw in ref[1:].lstrip("/").split("/") if ref not in ("#", "#/") else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise SchemaError(f"{where}: $ref {ref!r} points at nothing")
    if not isinstance(node, dict):
        raise SchemaError(f"{where}: $ref {ref!r} is not a schema")
    return node


def inline_refs(schema: Schema, notes: Notes, *, keep_recursive: bool = False) -> Schema:
    """Replace every local ``$ref`` by the schema it points at and drop ``$defs``/``definitions``.

    A recursive reference is unrolled ``REF_DEPTH`` times and then cut to ``{"type": "object"}`` (noted).
    Siblings of ``$ref`` (description, default …) are kept and win over the referenced schema's keys.
    """
    root = schema
    if not _has_ref(schema):
        return schema
    notes.append("inlined $ref")

    def rec(node: Schema, path: str, stack: tuple[str, ...]) -> Schema:
        ref = node.get("$ref")
        if isinstance(ref, str):
            if stack.count(ref) >= REF_DEPTH:
                notes.append(f"cut recursive $ref {ref} at {path or '/'}")
                cut: Schema = {"type": "object"}
                if "description" in node:
                    cut["description"] = node["description"]
                return cut
            target = resolve_ref(root, ref, path or "/")
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return rec(merged, path, (*stack, ref))
        out = map_subschemas(node, lambda s, p: rec(s, p, stack), path)
        out.pop("$defs", None)
        out.pop("definitions", None)
        return out

    return rec(schema, "", ())


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_ref(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_ref(v) for v in node)
    return False


def drop_vendor_keys(schema: Schema, notes: Notes, extra: tuple[str, ...] = ("$schema", "$id", "$comment")) -> Schema:
    """Drop ``x-*`` keywords (never property names) and meta keys the providers do not need."""
    dropped: set[str] = set()

    def fn(node: Schema, _path: str) -> Schema:
        bad = [k for k in node if k.startswith("x-") or k in extra]
        if not bad:
            return node
        dropped.update(bad)
        return {k: v for k, v in node.items() if k not in bad}

    out = walk(schema, fn)
    if dropped:
        notes.append("dropped keys " + ", ".join(sorted(dropped)))
    return out


def object_root(schema: Any, notes: Notes) -> Schema:
    """Every provider wants an object root with ``properties``; fix roots that lack them (noted)."""
    if not isinstance(schema, dict):
        raise SchemaError(f"input schema must be a JSON object, got {type(schema).__name__}")
    out = dict(schema)
    if out.get("type") != "object":
        if "type" in out and out["type"] not in ("object", ["object"]):
            raise SchemaError(f"input schema root must be an object schema, got type {out['type']!r}")
        if "type" not in out and not any(k in out for k in ("anyOf", "oneOf", "allOf")):
            notes.append("added root type object")
        out["type"] = "object"
    if not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    return out


def copy_schema(schema: Any) -> Schema:
    return copy.deepcopy(dict(schema)) if isinstance(schema, dict) else {}


def _is_array(node: Schema) -> bool:
    t = node.get("type")
    return t == "array" or (isinstance(t, list) and "array" in t)


def with_array_items(schema: Schema, notes: Notes) -> Schema:
    """Give every array schema without ``items`` the schema ``{}`` (any element): the same constraint, in the
    form OpenAI accepts (it answers an array without ``items`` with HTTP 400)."""
    added: list[str] = []

    def fn(node: Schema, path: str) -> Schema:
        if _is_array(node) and "items" not in node:
            added.append(path or "/")
            return {**node, "items": {}}
        return node

    out = walk(schema, fn)
    if added:
        notes.append("added items {} to arrays at " + ", ".join(added))
    return out


def resolve_root_ref(schema: Schema, notes: Notes) -> Schema:
    """A root that is a ``$ref`` (pydantic and zod emit them) becomes the schema it points at, its ``$defs``
    kept for the references inside; siblings of the ``$ref`` win, as everywhere else."""
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema
    target = resolve_ref(schema, ref, "/")
    notes.append("resolved the root $ref")
    return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
