"""Undoing strict mode's side effect on arguments: the ``null`` sent for optional properties the model left out.

Strict mode lists every property as required and makes the optional ones nullable, so the model sends ``null``
for each optional argument it does not use. Before the engine validates the arguments against the tool's real
schema, those nulls are removed wherever the real schema did not allow ``null`` — following the real schema
through ``$ref`` (also at the root), ``allOf`` parts, ``anyOf``/``oneOf`` branches and array ``items``, so
objects nested anywhere lose their added nulls too.
"""

from __future__ import annotations

from typing import Any

from engine.providers.rendering.schemas import Schema, SchemaError, resolve_ref

MAX_HOPS = 32  # reference chains longer than this are treated as opaque (a cycle of bare references)


def strip_added_nulls(args: Any, original: Schema) -> Any:
    """Drop ``null`` values that strict mode made the model send for optional properties of the real schema."""
    if not isinstance(original, dict):
        return args
    return _strip(args, original, original)


def _resolve(node: Any, root: Schema) -> Schema:
    """``node`` with its ``$ref`` chain followed (siblings of a ``$ref`` win, as in the renderer)."""
    hops = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and hops < MAX_HOPS:
        try:
            target = resolve_ref(root, node["$ref"], "/")
        except SchemaError:
            return {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        hops += 1
    return node if isinstance(node, dict) else {}


def _parts(node: Schema, root: Schema) -> list[Schema]:
    """The node and its ``allOf`` parts (recursively), each resolved: together they constrain one value."""
    node = _resolve(node, root)
    out = [node]
    for part in node.get("allOf") or []:
        if isinstance(part, dict):
            out.extend(_parts(part, root))
    return out


def _branches(parts: list[Schema], root: Schema) -> list[Schema]:
    return [_resolve(b, root) for p in parts for b in (p.get("anyOf") or []) + (p.get("oneOf") or [])]


def _object_shape(parts: list[Schema], root: Schema, value: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """Properties and required names that apply to an object value (the best-fitting union branch included)."""
    props: dict[str, Any] = {}
    required: set[str] = set()
    for p in parts:
        if isinstance(p.get("properties"), dict):
            for k, v in p["properties"].items():
                props.setdefault(k, [])
                props[k].append(v)
        required.update(r for r in p.get("required") or [] if isinstance(r, str))
    branches = [b for b in _branches(parts, root) if _is_object_schema(b, root)]
    if branches:
        keys = set(value)

        def fit(b: Schema) -> tuple[int, int]:
            bp = _object_shape(_parts(b, root), root, value)[0]
            return (len(keys & set(bp)), -len(set(bp) - keys))

        best = max(branches, key=fit)
        bprops, breq = _object_shape(_parts(best, root), root, value)
        for k, v in bprops.items():
            props.setdefault(k, []).extend(v)
        required |= breq
    return props, required


def _is_object_schema(node: Schema, root: Schema) -> bool:
    for p in _parts(node, root):
        t = p.get("type")
        if t == "object" or (isinstance(t, list) and "object" in t) or isinstance(p.get("properties"), dict):
            return True
    return False


def _strip(value: Any, node: Schema, root: Schema) -> Any:
    parts = _parts(node, root)
    if isinstance(value, dict):
        props, required = _object_shape(parts, root, value)
        if not props:
            return value
        out: dict[str, Any] = {}
        for k, v in value.items():
            subs = props.get(k)
            if subs is None:
                out[k] = v
                continue
            if v is None and k not in required and not all(_allows_null(s, root) for s in subs):
                continue
            for s in subs:
                v = _strip(v, s, root)
            out[k] = v
        return out
    if isinstance(value, list):
        items = [p["items"] for p in parts if isinstance(p.get("items"), dict)]
        items += [b["items"] for b in _branches(parts, root) if isinstance(b.get("items"), dict)]
        if not items:
            return value
        out_list = []
        for v in value:
            for s in items:
                v = _strip(v, s, root)
            out_list.append(v)
        return out_list
    return value


def _allows_null(sub: Any, root: Schema) -> bool:
    if not isinstance(sub, dict):
        return True
    parts = _parts(sub, root)
    for p in parts:
        t = p.get("type")
        if t is not None and not (t == "null" or (isinstance(t, list) and "null" in t)):
            return False
        if isinstance(p.get("enum"), list) and None not in p["enum"]:
            return False
        if "const" in p and p["const"] is not None:
            return False
        branches = [b for b in (p.get("anyOf") or []) + (p.get("oneOf") or []) if isinstance(b, dict)]
        if branches and not any(_allows_null(b, root) for b in branches):
            return False
    return True
