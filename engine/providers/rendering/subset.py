"""Down-converting JSON Schema to the restricted dialects: Gemini's OpenAPI ``Schema`` and ElevenLabs' subset.

Used only where the lossless path is not available: Gemini's legacy ``parameters`` field (the OpenAPI 3.0
subset: upper-case types, ``nullable``, string-only enums, no ``$ref``/``oneOf``/``allOf``/``not``/tuples) and
ElevenLabs client tools (type, description, properties, required, items, enum). Every change is noted so the
renderer can log it once per tool. Inputs have ``$ref`` inlined and vendor keys dropped already.
"""

from __future__ import annotations

import json
from typing import Any

from engine.providers.rendering.names import GEMINI_PARAM_RULE, ArgNames, NameMap
from engine.providers.rendering.normalise import fold_combinators, merge_all_of, normalise
from engine.providers.rendering.schemas import Notes, Schema

GEMINI_KEYS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "minItems",
        "maxItems",
        "properties",
        "required",
        "propertyOrdering",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
        "default",
        "example",
        "additionalProperties",
    }
)
GEMINI_FORMATS = {"STRING": {"enum", "date-time"}, "INTEGER": {"int32", "int64"}, "NUMBER": {"float", "double"}}
ELEVEN_KEYS = frozenset({"type", "description", "properties", "required", "items", "enum"})


def merge_root_union(schema: Schema, notes: Notes) -> Schema:
    """A root ``anyOf``/``oneOf`` of object schemas as ONE object: every branch's properties, required only what
    every branch requires, the alternatives named in the description. Dialects without root unions (Gemini's
    ``parameters``, Ollama) would otherwise keep no parameters at all; the engine still validates the call
    against the real schema."""
    key = "anyOf" if isinstance(schema.get("anyOf"), list) else "oneOf" if isinstance(schema.get("oneOf"), list) else ""
    if not key:
        return schema
    branches = [b for b in schema[key] if isinstance(b, dict)]
    objects = [b for b in branches if b.get("type", "object") == "object" and isinstance(b.get("properties"), dict)]
    if not objects:
        return schema
    out: Schema = {k: v for k, v in schema.items() if k != key}
    props: dict[str, Any] = dict(out.get("properties") or {})
    for b in objects:
        for name, sub in b["properties"].items():
            props.setdefault(name, sub)
    common = set.intersection(*(set(b.get("required") or []) for b in objects))
    out["type"] = "object"
    out["properties"] = props
    required = [r for r in dict.fromkeys([*(out.get("required") or []), *sorted(common)]) if r in props]
    if required:
        out["required"] = required
    else:
        out.pop("required", None)
    forms = "; ".join(
        "(" + ", ".join(f"{n}{'*' if n in (b.get('required') or []) else ''}" for n in b["properties"]) + ")"
        for b in objects
    )
    text = f"Arguments take one of these forms (* = required): {forms}."
    out["description"] = f"{out['description']} {text}" if out.get("description") else text
    notes.append(f"root {key} of {len(objects)} objects merged into one object")
    return out


def _open_map(node: Schema, where: str, notes: Notes) -> Schema:
    """``patternProperties`` (a map whose keys follow patterns) as an open map: Gemini has no patterns, so the
    values' schema becomes ``additionalProperties`` and the key patterns go into the description."""
    patterns = {k: v for k, v in node.pop("patternProperties").items() if isinstance(v, dict)}
    if not patterns or isinstance(node.get("additionalProperties"), dict):
        return node
    values = list(patterns.values())
    same = len({json.dumps(v, sort_keys=True) for v in values}) == 1
    node["additionalProperties"] = values[0] if same else {"anyOf": values}
    text = "Keys match " + " or ".join(patterns) + "."
    node["description"] = f"{node['description']} {text}" if node.get("description") else text
    notes.append(f"patternProperties as an open map at {where}")
    return node


def to_gemini_openapi(schema: Schema, notes: Notes, path: str = "", names: ArgNames | None = None) -> Schema:
    """JSON Schema → Gemini's OpenAPI 3.0 ``Schema`` (upper-case types). Property names are fitted to Gemini's
    parameter-name rule (``GEMINI_PARAM_RULE``); ``names`` collects the way back for the call's arguments."""
    names = names if names is not None else ArgNames()
    if not path:
        schema = merge_root_union(schema, notes)
    node = normalise(schema, path, notes)
    if isinstance(node.get("patternProperties"), dict):
        node = _open_map(node, path or "/", notes)
    out: Schema = {}
    dropped = sorted(k for k in node if k not in GEMINI_KEYS and k != "nullable")
    if dropped:
        notes.append(f"dropped {', '.join(dropped)} at {path or '/'}")
    fitted = NameMap(GEMINI_PARAM_RULE, [])
    for k, v in node.items():
        if k not in GEMINI_KEYS or (k == "default" and v is None):
            continue
        if k == "properties" and isinstance(v, dict):
            fitted = NameMap(GEMINI_PARAM_RULE, [n for n, s in v.items() if isinstance(s, dict)])
            if props := _gemini_properties(v, fitted, notes, path, names):
                out["properties"] = props
        else:
            _gemini_key(out, k, v, notes, path, names)
    _gemini_fit(out, fitted, notes, path)
    return out


def _gemini_properties(properties: dict[str, Any], fitted: NameMap, notes: Notes, path: str, names: ArgNames) -> Schema:
    """Each property rendered under its Gemini name; ``names`` learns the renames and the nested ways back."""
    props: Schema = {}
    for n, s in properties.items():
        if not isinstance(s, dict):
            continue
        pn, sub = fitted.provider_name(n), ArgNames()
        props[pn] = to_gemini_openapi(s, notes, f"{path}/properties/{n}", sub)
        names.declared.add(pn)
        if pn != n:
            names.renamed[pn] = n
            notes.append(f"parameter {n!r} named {pn!r} at {path or '/'}")
        if sub:
            names.props[pn] = sub
    return props


def _gemini_key(out: Schema, k: str, v: Any, notes: Notes, path: str, names: ArgNames) -> None:
    """One kept keyword other than ``properties`` into ``out``: types upper-cased, sub-schemas rendered."""
    if k == "type":
        out["type"] = str(v).upper()
    elif k in ("items", "additionalProperties") and isinstance(v, dict):
        sub = ArgNames()
        out[k] = to_gemini_openapi(v, notes, f"{path}/{k}", sub)
        if sub:
            setattr(names, "items" if k == "items" else "values", sub)
    elif k == "additionalProperties":
        if isinstance(v, bool):
            out[k] = v
    elif k == "anyOf":
        out["anyOf"] = [to_gemini_openapi(b, notes, f"{path}/anyOf/{i}", names) for i, b in enumerate(v)]
    else:
        out[k] = v


def _gemini_fit(out: Schema, fitted: NameMap, notes: Notes, path: str) -> None:
    """What Gemini refuses, fixed in place: untyped array items, formats of another type, unknown required names."""
    if out.get("type") == "ARRAY" and not (isinstance(out.get("items"), dict) and _typed(out["items"])):
        out["items"] = {"type": "STRING", "description": "Any value; JSON text for anything but a string."}
        notes.append(f"array items without a type sent as strings at {path or '/'}")
    fmt = out.get("format")
    if fmt is not None and fmt not in GEMINI_FORMATS.get(out.get("type", ""), set()):
        out.pop("format")
        notes.append(f"dropped format {fmt!r} at {path or '/'}")
    if "required" in out:
        props = out.get("properties", {})
        out["required"] = [r for r in (fitted.provider_name(n) for n in out["required"]) if r in props]
        if not out["required"]:
            out.pop("required")


def _typed(node: Schema) -> bool:
    return "type" in node or (isinstance(node.get("anyOf"), list) and all(_typed(b) for b in node["anyOf"]))


def to_elevenlabs(schema: Schema, notes: Notes, path: str = "", name: str = "") -> Schema:
    """JSON Schema → ElevenLabs' client-tool parameter subset (one type per property, descriptions present); a
    root union becomes one object as for Gemini and Ollama (a first-branch pick would lose the other forms)."""
    node = normalise(merge_root_union(schema, notes) if not path else schema, path, notes)
    node.pop("nullable", None)
    if "anyOf" in node:
        first = node.pop("anyOf")[0] if node["anyOf"] else {"type": "string"}
        node = {**to_elevenlabs(first, notes, path, name), **{k: v for k, v in node.items() if k in ELEVEN_KEYS}}
        notes.append(f"kept the first anyOf branch at {path or '/'}")
    out: Schema = {}
    for k, v in node.items():
        if k not in ELEVEN_KEYS:
            continue
        if k == "properties" and isinstance(v, dict):
            out[k] = {
                n: to_elevenlabs(s, notes, f"{path}/properties/{n}", n) for n, s in v.items() if isinstance(s, dict)
            }
        elif k == "items" and isinstance(v, dict):
            out[k] = to_elevenlabs(v, notes, f"{path}/items", name)
        else:
            out[k] = v
    out.setdefault("type", "object" if "properties" in out else "string")
    if out["type"] == "object":
        out.setdefault("properties", {})
        if "required" in out:
            kept = [r for r in out["required"] if r in out["properties"]]
            if len(kept) < len(out["required"]):
                notes.append(f"dropped required names not in properties at {path or '/'}")
            if kept:
                out["required"] = kept
            else:
                out.pop("required")
    if out["type"] == "array" and not isinstance(out.get("items"), dict):
        out["items"] = {"type": "string", "description": f"one {(name or 'value').replace('_', ' ')}"}
        notes.append(f"array without items sent as a list of strings at {path or '/'}")
    if out["type"] not in ("object", "array") and not out.get("description"):
        out["description"] = (name or "value").replace("_", " ")
    return out


def _ollama_node(node: Schema, path: str, notes: Notes) -> Schema:
    node = fold_combinators(node, path or "/", notes)
    out: Schema = {}
    for k, v in node.items():
        if k in ("properties", "$defs") and isinstance(v, dict):
            out[k] = {n: _ollama_node(s, f"{path}/{k}/{n}", notes) if isinstance(s, dict) else s for n, s in v.items()}
        elif k in ("items", "additionalProperties") and isinstance(v, dict):
            out[k] = _ollama_node(v, f"{path}/{k}", notes)
        elif k == "anyOf" and isinstance(v, list):
            out[k] = [
                _ollama_node(b, f"{path}/anyOf/{i}", notes) if isinstance(b, dict) else b for i, b in enumerate(v)
            ]
        else:
            out[k] = v
    return out


def to_ollama(schema: Schema, notes: Notes) -> Schema:
    """JSON Schema → what Ollama's server keeps (``api.ToolProperty``: type, description, enum, items, properties,
    required, anyOf): ``allOf`` merged, ``oneOf`` as ``anyOf``, ``const`` as a one-value ``enum``, and a root
    union or ``allOf`` made one object so the tool keeps its parameters. Inputs have ``$ref`` inlined."""
    root = dict(schema)
    if isinstance(root.get("allOf"), list):
        root = merge_all_of(root)
        notes.append("merged allOf at /")
    root = merge_root_union(root, notes)
    return _ollama_node(root, "", notes)
