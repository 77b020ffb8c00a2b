"""The first step of every down-conversion to a restricted dialect (Gemini, ElevenLabs, Ollama): ``allOf`` merged,
``oneOf`` as ``anyOf``, ``const`` as ``enum``, type unions and null branches resolved, non-string enums described.

Why a module of its own: ``engine.providers.rendering.subset`` renders the dialects; this is the JSON Schema
clean-up they share, one rule per function (each notes what it changed), which kept ``subset`` under 400 lines.
"""

from __future__ import annotations

import json
from typing import Any

from engine.providers.rendering.schemas import Notes, Schema

_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array"}


def infer_type(values: list[Any]) -> str | None:
    """The one JSON type of enum ``values`` (integers and floats: number), None for a mix."""
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {str}:
        return "string"
    if kinds <= {bool}:
        return "boolean"
    if kinds <= {int}:
        return "integer"
    if kinds <= {int, float}:
        return "number"
    return None


def _typed_branches(values: list[Any]) -> list[Schema]:
    kinds = list(dict.fromkeys(_JSON_TYPES.get(type(v), "string") for v in values))
    strings = [v for v in values if isinstance(v, str)]
    return [{"type": k, "enum": strings} if k == "string" and strings else {"type": k} for k in kinds]


def _describe_values(node: Schema, values: list[Any]) -> None:
    text = "Allowed values: " + ", ".join(json.dumps(v) for v in values) + "."
    desc = node.get("description")
    node["description"] = f"{desc} {text}" if desc else text


def merge_all_of(node: Schema) -> Schema:
    """``node`` with its ``allOf`` parts folded in: properties and required names joined, other keys kept first."""
    merged: Schema = {k: v for k, v in node.items() if k != "allOf"}
    for part in node["allOf"]:
        if not isinstance(part, dict):
            continue
        for k, v in part.items():
            if k == "properties":
                merged.setdefault("properties", {}).update(v)
            elif k == "required":
                merged["required"] = list(dict.fromkeys([*merged.get("required", []), *v]))
            else:
                merged.setdefault(k, v)
    return merged


def fold_combinators(node: Schema, where: str, notes: Notes) -> Schema:
    """A copy of ``node`` with its ``allOf`` merged, ``oneOf`` as ``anyOf`` and ``const`` as a one-value ``enum``
    (typed from its value when the node has no type): what no restricted dialect takes, in the form they all do."""
    node = dict(node)
    if isinstance(node.get("allOf"), list):
        node = merge_all_of(node)
        notes.append(f"merged allOf at {where}")
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
        notes.append(f"oneOf as anyOf at {where}")
    if "const" in node:
        value = node.pop("const")
        node["enum"] = [value]
        if "type" not in node and "anyOf" not in node:
            inferred = infer_type([value])
            if inferred:
                node["type"] = inferred
        notes.append(f"const as enum at {where}")
    return node


def normalise(node: Schema, path: str, notes: Notes) -> Schema:
    """Shared first step: allOf merged, oneOf → anyOf, const → enum, type unions and null branches resolved."""
    where = path or "/"
    node = fold_combinators(node, where, notes)
    nullable = _resolve_type_union(node, where, notes)
    node, null_branch = _resolve_any_of(node, where, notes)
    if nullable or null_branch:
        node["nullable"] = True
    if "enum" in node and isinstance(node["enum"], list):
        _resolve_enum(node, where, notes)
    _exclusive_bounds_as_inclusive(node, where, notes)
    _tuple_items_as_list(node, where, notes)
    return node


def _resolve_type_union(node: Schema, where: str, notes: Notes) -> bool:
    """A ``type`` list as one type or an ``anyOf`` of types (in place); whether it allowed null."""
    t = node.get("type")
    if not isinstance(t, list):
        return False
    rest = [x for x in t if x != "null"]
    if len(rest) == 1:
        node["type"] = rest[0]
    elif rest:
        node.pop("type")
        node["anyOf"] = [{"type": x} for x in rest]
    else:
        node["type"] = "string"
    notes.append(f"type union {t} converted at {where}")
    return len(rest) < len(t)


def _resolve_any_of(node: Schema, where: str, notes: Notes) -> tuple[Schema, bool]:
    """``anyOf`` without its null branches (one branch left: merged into the node); whether it had a null one."""
    if not isinstance(node.get("anyOf"), list):
        return node, False
    branches = [b for b in node["anyOf"] if isinstance(b, dict)]
    real = [b for b in branches if b.get("type") != "null"]
    had_null = len(real) < len(branches)
    if had_null:
        notes.append(f"null branch of anyOf as nullable at {where}")
    if len(real) == 1:
        node.pop("anyOf")
        return {**real[0], **node}, had_null
    node["anyOf"] = real
    return node, had_null


def _resolve_enum(node: Schema, where: str, notes: Notes) -> None:
    """An enum's null as ``nullable``, its type inferred, and non-string values moved into the description."""
    values = [v for v in node["enum"] if v is not None]
    if len(values) < len(node["enum"]):
        node["nullable"] = True
    if "type" not in node and "anyOf" not in node:
        inferred = infer_type(values)
        if inferred:
            node["type"] = inferred
        elif values:  # a mixed enum: one typed branch per kind of value (strings keep their enum)
            node["anyOf"] = _typed_branches(values)
            notes.append(f"mixed enum typed as anyOf at {where}")
    if not all(isinstance(v, str) for v in values):
        node.pop("enum")
        _describe_values(node, values)
        notes.append(f"non-string enum moved into the description at {where}")
    else:
        node["enum"] = values


def _exclusive_bounds_as_inclusive(node: Schema, where: str, notes: Notes) -> None:
    for lo, hi in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(node.get(lo), (int, float)) and not isinstance(node.get(lo), bool):
            node.setdefault(hi, node.pop(lo))
            notes.append(f"{lo} as {hi} at {where}")


def _tuple_items_as_list(node: Schema, where: str, notes: Notes) -> None:
    if "prefixItems" in node:
        prefix = [p for p in node.pop("prefixItems") if isinstance(p, dict)]
        node["items"] = prefix[0] if len({json.dumps(p, sort_keys=True) for p in prefix}) == 1 else {"anyOf": prefix}
        notes.append(f"tuple items as a list at {where}")
    if node.get("items") is False or isinstance(node.get("items"), list):
        node.pop("items")
