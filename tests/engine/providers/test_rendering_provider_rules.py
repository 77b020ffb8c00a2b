"""Schemas per provider by each one's documented rules: ElevenLabs root unions, Gemini's OpenAPI mode (open maps,
array items, typed mixed enums, parameter names with a way back), Deepgram's array items and function limit."""

from __future__ import annotations

import re
from typing import Any

from google.genai import types as gt

from engine.providers.rendering import render_tools

GEMINI_PARAM = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,63}$")


def decl(schema: dict[str, Any], name: str = "t") -> dict[str, Any]:
    return {"name": name, "description": "A tool.", "input_schema": schema}


def walk(node: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        out.append(node)
        for v in node.values():
            out.extend(walk(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(walk(v))
    return out


def gemini_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    tools = render_tools("gemini", [decl(schema)], gemini_schema="openapi").tools
    gt.Tool.model_validate(tools[0])  # the SDK's own types take it
    params: dict[str, Any] = tools[0]["functionDeclarations"][0]["parameters"]
    return params


UNION = {
    "anyOf": [
        {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        {
            "type": "object",
            "properties": {"email": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["email"],
        },
    ]
}


def test_elevenlabs_merges_a_root_anyof_into_one_object() -> None:
    params = render_tools("elevenlabs_agent", [decl(UNION)]).tools[0]["parameters"]
    assert params["type"] == "object" and set(params["properties"]) == {"order_id", "email", "zip"}
    assert "required" not in params  # no property is required by every form
    assert "one of these forms" in params.get("description", "")


def test_gemini_openapi_keeps_pattern_property_maps_open_with_their_values_described() -> None:
    schema = {
        "type": "object",
        "properties": {"labels": {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}}}},
    }
    labels = gemini_parameters(schema)["properties"]["labels"]
    assert labels["type"] == "OBJECT"
    assert labels.get("additionalProperties") == {"type": "INTEGER"}
    assert "^[a-z]+$" in labels.get("description", "")


def test_gemini_openapi_gives_every_array_items() -> None:
    schema = {
        "type": "object",
        "properties": {"ids": {"type": "array"}, "grid": {"type": "array", "items": {"type": "array"}}},
    }
    params = gemini_parameters(schema)
    arrays = [n for n in walk(params) if n.get("type") == "ARRAY"]
    assert len(arrays) == 3 and all(isinstance(a.get("items"), dict) and a["items"].get("type") for a in arrays)


def test_gemini_openapi_types_a_mixed_enum() -> None:
    schema = {"type": "object", "properties": {"level": {"enum": ["low", 2, True]}}}
    level = gemini_parameters(schema)["properties"]["level"]
    assert level.get("type") or all(b.get("type") for b in level.get("anyOf", [{}]))
    assert "low" in level.get("description", "") or "low" in str(level)
    for node in walk(level):
        assert "enum" not in node or all(isinstance(v, str) for v in node["enum"])


def test_gemini_openapi_fits_parameter_names_and_maps_the_arguments_back() -> None:
    schema = {
        "type": "object",
        "properties": {
            "user-id": {"type": "string"},
            "2fa": {"type": "string"},
            "ok_name": {"type": "object", "properties": {"x.y": {"type": "integer"}}},
            "rows": {"type": "array", "items": {"type": "object", "properties": {"a b": {"type": "string"}}}},
        },
        "required": ["user-id"],
    }
    rendered = render_tools("gemini", [decl(schema)], gemini_schema="openapi")
    params = rendered.tools[0]["functionDeclarations"][0]["parameters"]
    names = [n for node in walk(params) for n in (node.get("properties") or {})]
    assert len(names) == 6 and all(GEMINI_PARAM.match(n) for n in names), names
    assert params["required"] == [n for n in params["properties"] if n.startswith("user")]
    p = params["properties"]
    provider_args = {
        next(n for n in p if n.startswith("user")): "u1",
        next(n for n in p if "2fa" in n): "123456",
        "ok_name": {next(iter(p["ok_name"]["properties"])): 7},
        "rows": [{next(iter(p["rows"]["items"]["properties"])): "r"}],
    }
    assert rendered.restore_arguments("t", provider_args) == {
        "user-id": "u1",
        "2fa": "123456",
        "ok_name": {"x.y": 7},
        "rows": [{"a b": "r"}],
    }
    assert rendered.restore_arguments("t", '{"ok_name": {}}') == {"ok_name": {}}  # JSON text is read too


def test_deepgram_gives_arrays_items() -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "array"}}}
    fn = render_tools("deepgram_agent", [decl(schema)]).tools[0]
    assert fn["parameters"]["properties"]["tags"].get("items") == {}


def test_deepgram_caps_functions_at_the_documented_limit() -> None:
    decls = [decl({"type": "object", "properties": {}}, f"t{i:03d}") for i in range(130)]
    rendered = render_tools("deepgram_agent", decls)
    assert len(rendered.tools) == 128 and rendered.limit == 128
    assert rendered.omitted == ("t128", "t129")
