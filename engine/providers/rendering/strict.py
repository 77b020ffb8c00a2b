"""OpenAI strict mode (Structured Outputs for function arguments) and undoing its side effect on arguments.

Strict mode needs every object closed (``additionalProperties: false``) with every property required; optional
properties become nullable instead (reference/wire-formats.md §1.5, the SDK's ``_ensure_strict_json_schema``).
A schema that cannot be made strict (free-form maps, a root ``anyOf``, tuples) raises ``NotStrictable`` and the
renderer sends that one tool non-strict. The model then sends ``null`` for an optional argument it does not use;
``strip_added_nulls`` removes those before the engine validates the arguments against the tool's real schema.
"""

from __future__ import annotations

from typing import Any

from engine.providers.rendering.schemas import Notes, Schema, map_subschemas

UNSUPPORTED = (
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "contains",
    "minProperties",
    "maxProperties",
    "default",
    "examples",
    "$schema",
    "$id",
    "$comment",
)


class NotStrictable(ValueError):
    """This schema cannot be expressed in OpenAI strict mode (the message says why and where)."""


def strict_schema(schema: Schema, notes: Notes) -> Schema:
    """The strict-mode form of an object-root schema (``$defs``/``$ref`` kept: strict mode supports them)."""
    if "anyOf" in schema or "oneOf" in schema:
        raise NotStrictable("root is anyOf/oneOf")
    dropped: set[str] = set()
    out = _strict(schema, "", dropped, notes)
    if dropped:
        notes.append("strict: dropped " + ", ".join(sorted(dropped)))
    return out


def _merge_all_of(node: Schema, path: str, notes: Notes) -> Schema:
    parts = node["allOf"]
    rest = {k: v for k, v in node.items() if k != "allOf"}
    if not all(isinstance(p, dict) for p in parts):
        raise NotStrictable(f"{path or '/'}: allOf with non-schema parts")
    merged: Schema = dict(rest)
    for p in parts:
        for k, v in p.items():
            if k == "properties":
                merged.setdefault("properties", {}).update(v)
            elif k == "required":
                merged["required"] = list(dict.fromkeys([*merged.get("required", []), *v]))
            elif k in merged and merged[k] != v:
                raise NotStrictable(f"{path or '/'}: allOf parts disagree on {k!r}")
            else:
                merged[k] = v
    notes.append(f"strict: merged allOf at {path or '/'}")
    return merged


def _strict(node: Schema, path: str, dropped: set[str], notes: Notes) -> Schema:
    if "allOf" in node:
        node = _merge_all_of(node, path, notes)
    if "prefixItems" in node or isinstance(node.get("items"), list):
        raise NotStrictable(f"{path or '/'}: tuple-style items")
    node = dict(node)
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    for k in UNSUPPORTED:
        if k in node:
            dropped.add(k)
            node.pop(k)
    is_object = node.get("type") == "object" or "properties" in node
    if is_object:
        extra = node.get("additionalProperties")
        props = node.get("properties") or {}
        if extra not in (None, False) and not (extra is True and props):
            raise NotStrictable(f"{path or '/'}: free-form object (additionalProperties) cannot be strict")
        if extra is True:
            dropped.add("additionalProperties")
        required = set(node.get("required") or [])
        new_props: dict[str, Any] = {}
        for name, sub in props.items():
            sub = _strict(sub, f"{path}/properties/{name}", dropped, notes) if isinstance(sub, dict) else sub
            new_props[name] = sub if name in required else _nullable(sub)
        node["properties"] = new_props
        node["required"] = list(new_props)
        node["additionalProperties"] = False
        node.setdefault("type", "object")
    rec = lambda s, p: _strict(s, p, dropped, notes)  # noqa: E731
    rest = {k: v for k, v in node.items() if k != "properties"}
    out = map_subschemas(rest, rec, path)
    if "properties" in node:
        out["properties"] = node["properties"]
    return out


def _nullable(sub: Any) -> Any:
    if not isinstance(sub, dict):
        return sub
    t = sub.get("type")
    out = dict(sub)
    if isinstance(t, str):
        if t == "null":
            return out
        out["type"] = [t, "null"]
    elif isinstance(t, list):
        if "null" not in t:
            out["type"] = [*t, "null"]
    elif "anyOf" in out:
        if not any(isinstance(b, dict) and b.get("type") == "null" for b in out["anyOf"]):
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        return out
    else:
        return {"anyOf": [out, {"type": "null"}]}
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def strip_added_nulls(args: Any, original: Schema) -> Any:
    """Drop ``null`` values that strict mode made the model send for optional properties of the real schema."""
    if not isinstance(args, dict) or not isinstance(original, dict):
        return args
    if "properties" not in original:  # a union: use the object branch
        branches = [b for b in original.get("anyOf", []) + original.get("oneOf", []) if isinstance(b, dict)]
        original = next((b for b in branches if isinstance(b.get("properties"), dict)), original)
    props = original.get("properties")
    if not isinstance(props, dict):
        return args
    required = set(original.get("required") or [])
    out: dict[str, Any] = {}
    for k, v in args.items():
        sub = props.get(k)
        if v is None and k not in required and not _allows_null(sub):
            continue
        out[k] = strip_added_nulls(v, sub) if isinstance(sub, dict) else v
    return out


def _allows_null(sub: Any) -> bool:
    if not isinstance(sub, dict):
        return True
    t = sub.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if None in (sub.get("enum") or []):
        return True
    return any(_allows_null(b) for b in sub.get("anyOf", []) + sub.get("oneOf", []) if isinstance(b, dict))
