"""Names, schemas and declarations for all eleven provider types over a corpus of real MCP tool schemas."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
import sdk_validate
from anthropic.types import ToolParam
from google.genai import types as gt
from ollama import _types as ot
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import TypeAdapter

from engine.providers.rendering import PROVIDER_TYPES, ToolRenderer, render_declarations, render_tools
from engine.providers.rendering.names import GEMINI_RULE, OPENAI_RULE, NameMap
from engine.providers.rendering.schemas import SchemaError, inline_refs
from engine.providers.rendering.strict import strip_added_nulls
from engine.tools.base import FunctionTool, ToolDefinition, ToolResult
from engine.tools.registry import ToolRegistry
from engine.tools.view import ToolViewBuilder

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "tool_schemas"
STRICT_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
GEMINI_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")


def corpus() -> list[dict[str, Any]]:
    out = []
    for f in sorted(CORPUS.glob("*.json")):
        for t in json.loads(f.read_text())["tools"]:
            out.append({"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]})
    return out


def test_corpus_has_the_required_cases() -> None:
    decls = corpus()
    names = {d["name"] for d in decls}
    assert {"echo", "get-sum", "get-annotated-message"} <= names  # server-everything
    text = json.dumps(decls)
    assert "$ref" in text and "anyOf" in text and '"x-' in text
    assert any(len(n) > 64 for n in names)


def _tools(provider_type: str, rendered: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if provider_type in ("gemini", "gemini_live"):
        return [fd for t in rendered for fd in t["functionDeclarations"]]
    return rendered


def _name(provider_type: str, tool: dict[str, Any]) -> str:
    return str(tool["function"]["name"] if provider_type in ("openai_chat", "ollama") else tool["name"])


@pytest.mark.parametrize("provider_type", PROVIDER_TYPES)
@pytest.mark.parametrize("strict", [False, True])
def test_every_provider_gets_valid_unique_names(provider_type: str, strict: bool) -> None:
    decls = corpus()
    rendered = render_tools(provider_type, decls, strict=strict)
    tools = _tools(provider_type, rendered.tools)
    assert len(tools) == len(decls)
    names = [_name(provider_type, t) for t in tools]
    assert len(set(names)) == len(names), "two tools share a provider name"
    for exposed, pname in zip((d["name"] for d in decls), names, strict=True):
        assert rendered.names.exposed_name(pname) == exposed
        if provider_type in ("scripted", "pipeline"):
            assert pname == exposed
        elif provider_type in ("gemini", "gemini_live"):
            assert GEMINI_NAME.match(pname), pname
        else:
            assert STRICT_NAME.match(pname), pname


def test_names_are_stable_and_valid_names_are_kept() -> None:
    names = ["github.create_issue", "github_create_issue", "x" * 80, "x" * 80 + "_b", "ok-name"]
    a, b = NameMap(OPENAI_RULE, names), NameMap(OPENAI_RULE, list(reversed(names)))
    assert a.items() != [] and dict(a.items()) == dict(b.items())
    assert a.provider_name("github_create_issue") == "github_create_issue"  # valid name keeps its name
    assert a.provider_name("github.create_issue").startswith("github_create_issue_")
    assert a.provider_name("x" * 80) != a.provider_name("x" * 80 + "_b")
    assert all(len(p) <= 64 for _, p in a.items())
    g = NameMap(GEMINI_RULE, ["3d_print", "_3d_print"])
    assert g.provider_name("_3d_print") == "_3d_print" and g.provider_name("3d_print") != "_3d_print"
    # A name outside the map (older history) is still rendered validly.
    assert STRICT_NAME.match(a.provider_name("weird name/with spaces"))


def test_sdk_types_accept_every_declaration() -> None:
    decls = corpus()
    chat = TypeAdapter(ChatCompletionFunctionToolParam)
    resp = TypeAdapter(FunctionToolParam)
    anth = TypeAdapter(ToolParam)
    for strict in (False, True):
        for t in render_declarations("openai_chat", decls, strict):
            chat.validate_python(t)
        for t in render_declarations("openai_responses", decls, strict):
            resp.validate_python(t)
    for t in render_declarations("anthropic", decls):
        anth.validate_python(t)
    for mode in ("json_schema", "openapi"):
        for t in render_tools("gemini", decls, gemini_schema=mode).tools:
            gt.Tool.model_validate(t)
    for t in render_declarations("ollama", decls):
        ot.Tool.model_validate(t)
    sdk_validate.ollama({"model": "m", "messages": [], "tools": render_declarations("ollama", decls)})


def _walk(node: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        out.append(node)
        for v in node.values():
            out.extend(_walk(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_walk(v))
    return out


def test_gemini_openapi_subset_is_respected() -> None:
    tools = _tools("gemini", render_tools("gemini", corpus(), gemini_schema="openapi").tools)
    allowed_types = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
    for t in tools:
        for node in _walk(t.get("parameters", {})):
            if "type" in node and isinstance(node["type"], str) and node is not t:
                assert node["type"] in allowed_types, (t["name"], node)
            assert not any(k.startswith(("x-", "$")) for k in node if k not in ("properties",)), (t["name"], node)
            for bad in ("oneOf", "allOf", "not", "const", "prefixItems"):  # additionalProperties: the SDK takes it
                assert bad not in node or (isinstance(node.get("properties"), dict) and bad in node["properties"])
            if "enum" in node:
                assert all(isinstance(v, str) for v in node["enum"]), (t["name"], node)
    dice = next(t for t in tools if t["name"] == "mcp_dice_roll_number_enum")
    sides = dice["parameters"]["properties"]["sides"]
    assert sides["type"] == "INTEGER" and "4, 6, 8" in sides["description"]
    search = next(t for t in tools if t["name"] == "mcp_search_any_of")
    assert search["parameters"]["properties"]["query"] == {"type": "STRING", "nullable": True, "title": "Query"}
    assert search["parameters"]["properties"]["limit"]["nullable"] is True


def test_gemini_json_schema_path_is_lossless_except_vendor_keys() -> None:
    decls = {d["name"]: d for d in corpus()}
    tools = {t["name"]: t for t in _tools("gemini", render_declarations("gemini", list(decls.values())))}
    ref = tools["mcp_weather_lookup_with_ref"]["parametersJsonSchema"]
    assert ref["properties"]["place"] == {"$ref": "#/$defs/Place"} and "$defs" in ref
    vendor = json.dumps(tools["mcp_vendor_x_keys"]["parametersJsonSchema"])
    assert '"x-' not in vendor and '"format": "uuid"' in vendor


def test_ref_inlining_and_recursion_cut() -> None:
    decl = next(d for d in corpus() if d["name"] == "mcp_tree_walk")
    notes: list[str] = []
    out = inline_refs(decl["input_schema"], notes)
    assert "$ref" not in json.dumps(out) and "definitions" not in out
    assert any("cut recursive" in n for n in notes)
    with pytest.raises(SchemaError, match="points at nothing"):
        inline_refs({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}, [])
    tool = next(
        t for t in render_declarations("ollama", corpus()) if t["function"]["name"] == "mcp_weather_lookup_with_ref"
    )
    place = tool["function"]["parameters"]["properties"]["place"]
    assert place["properties"]["city"] == {"type": "string"} and place["required"] == ["city"]


def test_openai_strict_mode_rules() -> None:
    rendered = render_tools("openai_chat", corpus(), strict=True)
    by_name = {t["function"]["name"]: t["function"] for t in rendered.tools}
    for fn in by_name.values():
        if not fn["strict"]:
            continue
        for node in _walk(fn["parameters"]):
            if node.get("type") == "object" or (isinstance(node.get("type"), list) and "object" in node["type"]):
                assert node["additionalProperties"] is False
                assert sorted(node["required"]) == sorted(node["properties"])
    search = by_name["mcp_search_any_of"]
    assert search["strict"] is True
    assert search["parameters"]["properties"]["limit"]["type"] == ["integer", "null"]
    # Free-form maps and tuples cannot be strict: those tools are sent non-strict, the others stay strict.
    assert by_name["mcp_allof_patch"]["strict"] is False
    assert by_name["mcp_tuple_items"]["strict"] is False
    assert by_name["echo"]["strict"] is True
    original = rendered.strict_originals["mcp_search_any_of"]
    args = {"query": None, "limit": None, "filter": {"field": None, "value": "x"}, "tags": None}
    # query and limit allow null in the real schema; filter.field did not (strict mode added it).
    assert strip_added_nulls(args, original) == {"query": None, "limit": None, "filter": {"value": "x"}}


def test_each_transformation_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    decls = [
        {
            "name": "mcp_logged_once_tool",
            "description": "d",
            "input_schema": {"type": "object", "properties": {"a": {"type": "integer", "enum": [1, 2]}}},
        }
    ]
    with caplog.at_level(logging.INFO, logger="engine.providers.rendering"):
        render_declarations("elevenlabs_agent", decls)
        render_declarations("elevenlabs_agent", decls)
    hits = [r for r in caplog.records if "mcp_logged_once_tool" in r.getMessage()]
    assert len(hits) == 1 and "enum" in hits[0].getMessage()


def test_canonical_for_scripted_and_pipeline_and_unknown_type_errors() -> None:
    decls = corpus()[:3]
    canonical = render_declarations("scripted", decls)[0]["input_schema"]
    assert canonical["properties"] == decls[0]["input_schema"]["properties"]
    with pytest.raises(ValueError, match="unknown provider type 'bogus'"):
        render_declarations("bogus", decls)
    with pytest.raises(ValueError, match="root must be an object"):
        render_declarations("anthropic", [{"name": "t", "input_schema": {"type": "string"}}])


async def _ok(args: dict[str, Any], ctx: Any) -> ToolResult:
    return ToolResult.success("ok")


def test_renderer_caches_by_view_key() -> None:
    reg = ToolRegistry()
    for d in corpus()[:5]:
        name = d["name"].replace("-", "_").replace(".", "_").lower()
        reg.register(FunctionTool(ToolDefinition(name, d["description"], input_schema=d["input_schema"]), _ok))
    views = ToolViewBuilder(reg)
    r = ToolRenderer("anthropic")
    v1 = views.view(["*"], "standard")
    first = r.render(v1)
    assert r.render(views.view(["*"], "standard")) is first and r.renders == 1
    v2 = views.view(["*"], "standard", overrides={reg.names()[0]: False}, call_revision=1)
    second = r.render(v2)
    assert r.renders == 2 and second.count == first.count - 1
