"""Audit findings 2-4 (issue #14 §4): arrays without ``items``, the tools-per-request cap, Gemini's OpenAPI
dialect and Ollama's server subset — each through the renderer, the fakes and ``ava-engine``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai_rules
import pytest
from audit_harness import audit_engine, ava_engine, ava_engine_call
from fakebase import Reply
from fakes import FAKES
from google.genai import types as gt

from engine.events import ToolsOmitted
from engine.providers.rendering import render_declarations, render_tools
from engine.sessions.history import ToolResultItem
from engine.tools.base import ToolCategory, ToolDefinition
from engine.tools.view import ToolView
from tests.fixtures.mcp_servers.schema_server import AUDIT, MANY, SLOPPY

#: What Ollama's server keeps of a property (reference/wire-formats.md §9.1: api.ToolProperty) and of the root.
OLLAMA_KEYS = {"type", "description", "enum", "items", "properties", "required", "anyOf"}


def _decls(schemas: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": n, "description": n, "input_schema": s} for n, s in schemas.items()]


def _nodes(node: Any) -> list[dict[str, Any]]:
    """Every schema node (the values of ``properties`` maps, not the maps themselves)."""
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        out.append(node)
        for k, v in node.items():
            if k == "properties" and isinstance(v, dict):
                for sub in v.values():
                    out.extend(_nodes(sub))
            elif isinstance(v, dict):
                out.extend(_nodes(v))
            elif isinstance(v, list):
                for x in v:
                    out.extend(_nodes(x))
    return out


# ------------------------------------------------------------------------------------ finding 2: array items


@pytest.mark.parametrize("provider_type", ["openai_chat", "openai_responses", "openai_realtime"])
def test_openai_arrays_always_have_items(provider_type: str) -> None:
    for strict in (False, True):
        rendered = render_declarations(provider_type, _decls(AUDIT), strict)
        params = [t.get("function", t)["parameters"] for t in rendered]
        for p in params:
            openai_rules.check_arrays(p, provider_type)
    bare = render_declarations(provider_type, _decls(SLOPPY))[0]
    props = bare.get("function", bare)["parameters"]["properties"]
    assert props["ids"]["items"] == {} and props["opt"]["items"] == {}  # {} = any element: the same meaning


async def test_openai_call_with_a_bare_array_tool_is_accepted() -> None:
    fake = FAKES["openai_chat"]([Reply(calls=[("mcp_audit_bare_array", {"ids": [1, "a"]})]), Reply(text="Ok.")])
    async with fake:
        engine = audit_engine(fake, ["mcp_audit_bare_array"])
        async with engine:
            call = await engine.start_call("desk")
            reply = await engine.user_said(call.call_id, "go")
    assert fake.errors == [] and reply.text == "Ok."


def test_elevenlabs_arrays_have_item_types_and_required_names_exist() -> None:
    from elevenlabs.types import ClientToolConfigInput

    for tool in render_declarations("elevenlabs_agent", _decls(AUDIT)):
        ClientToolConfigInput.model_validate(tool)
        for node in _nodes(tool["parameters"]):
            if node.get("type") == "array":
                assert isinstance(node.get("items"), dict) and node["items"].get("type"), (tool["name"], node)
            if node.get("type") == "object":
                assert set(node.get("required", [])) <= set(node.get("properties", {})), (tool["name"], node)
    bare = next(t for t in render_declarations("elevenlabs_agent", _decls(SLOPPY)))
    assert bare["parameters"]["required"] == ["ids"]


# ------------------------------------------------------------------------------------ finding 3: tool cap


def _defs(n: int) -> list[ToolDefinition]:
    out = [ToolDefinition(f"t{i:03d}", "x", server="srv") for i in range(n)]
    out.append(ToolDefinition("zz_hangup", "end the call", category=ToolCategory.TELEPHONY))
    return out


class _Entry:
    def __init__(self, d: ToolDefinition) -> None:
        self.tool = type("T", (), {"definition": d})()
        self.name = d.name


def test_cap_keeps_call_control_and_names_the_rest() -> None:
    defs = _defs(140)
    view = ToolView.build(("k",), [_Entry(d) for d in defs], [], "standard")  # type: ignore[misc]
    for ptype in ("openai_chat", "openai_responses", "openai_realtime"):
        r = render_tools(ptype, view)
        assert r.count == 128 and r.limit == 128
        assert len(r.omitted) == 13 and r.omitted == tuple(f"t{i:03d}" for i in range(127, 140))
        names = [t.get("function", t)["name"] for t in r.tools]
        assert "zz_hangup" in names and names == sorted(names)  # the view's order is kept
        openai_rules.check_tools(r.tools, flat=ptype != "openai_chat")
    assert render_tools("anthropic", view).omitted == ()  # no documented limit there


async def test_a_call_over_the_limit_keeps_working_and_says_what_was_left_out() -> None:
    fake = FAKES["openai_chat"]([Reply(calls=[("mcp_many_t000", {"q": "x"})]), Reply(text="Found it.")])
    async with fake:
        engine = audit_engine(fake, ["mcp_many_*", "hangup_call"])
        async with engine:
            sub = engine.bus.subscribe(types={ToolsOmitted.type})
            call = await engine.start_call("desk")
            reply = await engine.user_said(call.call_id, "go")
            events = [e for e in sub.drain() if isinstance(e, ToolsOmitted)]
            sub.close()
    assert fake.errors == [], fake.errors
    assert reply.text == "Found it." and len(fake.requests[0]["tools"]) == 128
    assert "hangup_call" in fake.tool_names(fake.requests[0])
    assert len(reply.meta["tools_omitted"]) == MANY + 1 - 128
    assert [(e.call_id, e.provider, e.limit, len(e.omitted)) for e in events] == [
        (call.call_id, "p", 128, MANY + 1 - 128)
    ], "one event per view, not per request"


def test_tools_json_lists_the_tools_left_out(tmp_path: Path) -> None:
    out = ava_engine(tmp_path, "tools", "--context", "many", "--provider", "openai_responses")
    assert len(out["tools"]) == 128 and out["rendering"]["limit"] == 128
    assert len(out["rendering"]["omitted"]) == MANY + 1 - 128
    assert "hangup_call" in {t["name"] for t in out["tools"]}
    assert not {t["name"] for t in out["tools"]} & set(out["rendering"]["omitted"])


# ------------------------------------------------------------------------------------ finding 4: Gemini, Ollama

ROOT_ANY_OF = {
    "type": "object",
    "anyOf": [
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat"]},
    ],
}
MAP = {"type": "object", "properties": {"scores": {"type": "object", "additionalProperties": {"type": "number"}}}}


def test_gemini_openapi_root_any_of_keeps_its_parameters_and_maps_stay() -> None:
    tools = render_tools("gemini", _decls({"where": ROOT_ANY_OF, "scores": MAP}), gemini_schema="openapi").tools
    for t in tools:
        gt.Tool.model_validate(t)
    where, scores = tools[0]["functionDeclarations"]
    assert set(where["parameters"]["properties"]) == {"city", "lat", "lon"}
    assert "required" not in where["parameters"]  # no field is required by every form
    assert "city" in where["parameters"]["description"] and "lat*" in where["parameters"]["description"]
    assert scores["parameters"]["properties"]["scores"]["additionalProperties"] == {"type": "NUMBER"}


async def test_gemini_openapi_request_keeps_a_map_tool() -> None:
    fake = FAKES["gemini"]([Reply(text="Fine.")])
    async with fake:
        engine = audit_engine(fake, ["mcp_audit_typed_map"], options={"gemini_schema": "openapi"})
        async with engine:
            call = await engine.start_call("desk")
            await engine.user_said(call.call_id, "hi")
    assert fake.errors == []
    decl = fake.requests[0]["tools"][0]["functionDeclarations"][0]
    assert decl["parameters"]["properties"]["scores"]["additionalProperties"] == {"type": "NUMBER"}


OLLAMA_CASES: dict[str, dict[str, Any]] = {
    "root_all_of": {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "integer"}}},
        ]
    },
    "one_of_const": {
        "type": "object",
        "properties": {
            "mode": {"const": "fast"},
            "target": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "patch": {"allOf": [{"type": "object", "properties": {"op": {"type": "string"}}, "required": ["op"]}]},
        },
    },
    "root_any_of": ROOT_ANY_OF,
}


def test_ollama_gets_only_what_its_server_keeps() -> None:
    tools = {
        t["function"]["name"]: t["function"]["parameters"] for t in render_declarations("ollama", _decls(OLLAMA_CASES))
    }
    for name, params in tools.items():
        for node in _nodes(params)[1:]:
            assert set(node) <= OLLAMA_KEYS, (name, node)
        assert set(params) <= OLLAMA_KEYS | {"$defs"}, (name, params)
        assert params["properties"], f"{name} lost its parameters"
    assert tools["root_all_of"]["properties"] == {"a": {"type": "string"}, "b": {"type": "integer"}}
    assert tools["root_all_of"]["required"] == ["a"]
    one = tools["one_of_const"]["properties"]
    assert one["mode"] == {"enum": ["fast"], "type": "string"}
    assert one["target"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert one["patch"]["properties"] == {"op": {"type": "string"}} and one["patch"]["required"] == ["op"]
    assert set(tools["root_any_of"]["properties"]) == {"city", "lat", "lon"}


async def test_ollama_call_with_a_root_all_of_tool() -> None:
    fake = FAKES["ollama"]([Reply(calls=[("mcp_audit_order_allof", {"order": {"id": "9"}})]), Reply(text="Ok.")])
    async with fake:
        engine = audit_engine(fake, ["mcp_audit_order_allof"])
        async with engine:
            call = await engine.start_call("desk")
            reply = await engine.user_said(call.call_id, "go")
    assert fake.errors == [] and reply.text == "Ok."
    order = fake.requests[0]["tools"][0]["function"]["parameters"]["properties"]["order"]
    assert "allOf" not in order and set(order["properties"]) == {"id", "note"}


async def test_ava_engine_call_reports_the_omitted_tools_as_an_event(tmp_path: Path) -> None:
    """``ava-engine call --json`` (the installed command) against the fake: the call runs with 128 tools and
    prints one tools.omitted event."""
    fake = FAKES["openai_chat"]([Reply(text="Hello back.")])
    async with fake:
        out = await ava_engine_call(tmp_path, fake.base_url, "many", "hello")
    assert fake.errors == [] and len(fake.requests[0]["tools"]) == 128
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    omitted = [e for e in events if e["type"] == "tools.omitted"]
    assert len(omitted) == 1 and omitted[0]["limit"] == 128 and len(omitted[0]["omitted"]) == MANY + 1 - 128
    assert any(e["type"] == "transcript.added" and e["text"] == "Hello back." for e in events)


async def test_a_call_to_a_tool_left_out_is_rejected_and_the_conversation_goes_on() -> None:
    fake = FAKES["openai_chat"]([Reply(calls=[("mcp_many_t139", {"q": "x"})]), Reply(text="Sorry, I cannot.")])
    async with fake:
        engine = audit_engine(fake, ["mcp_many_*", "hangup_call"])
        async with engine:
            call = await engine.start_call("desk")
            reply = await engine.user_said(call.call_id, "go")
            results = [i for i in call.history.items() if isinstance(i, ToolResultItem)]
    assert fake.errors == [] and reply.text == "Sorry, I cannot."
    assert "mcp_many_t139" not in fake.tool_names(fake.requests[0])
    assert [(r.name, r.status) for r in results] == [("mcp_many_t139", "rejected")]
    assert "not offered" in results[0].message
