"""Deepgram agent payloads (Settings, think, context) and the strictness of the fake that checks them."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr
from realtime_deepgram_fake import DeepgramFake, validate_client_message

from engine.budget.metadata import resolve_latency
from engine.config.models import ProviderConfig
from engine.providers.factory import create_provider
from engine.providers.rendering import render_declarations
from engine.realtime import deepgram_settings as ds
from engine.realtime.deepgram_agent import DeepgramAgentProvider
from engine.realtime.session import PCM16_8K, PCM16_16K, PCM16_24K, PCMA_8K, PCMU_8K
from engine.sessions.history import History, ToolCallItem, ToolResultItem
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult
from engine.tools.registry import ToolRegistry
from engine.tools.view import ToolView, ToolViewBuilder


def provider(**kw: Any) -> DeepgramAgentProvider:
    cfg = ProviderConfig(type="deepgram_agent", api_key=SecretStr("dg-key"), **kw)
    p = create_provider("dg", cfg)
    assert isinstance(p, DeepgramAgentProvider)
    return p


async def _noop(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
    return ToolResult.success("ok")


def view_of(*defs: ToolDefinition) -> ToolView:
    reg = ToolRegistry()
    for d in defs:
        reg.register(FunctionTool(d, _noop))
    return ToolViewBuilder(reg).view([d.name for d in defs], "deep")


def mcp_definition(name: str, annotations: dict[str, Any]) -> ToolDefinition:
    """A tool as the MCP host builds it: its latency (and idempotence) resolved from the server's annotations."""
    latency, _ = resolve_latency(name, None, None, annotations)
    return ToolDefinition(name, f"{name} tool", input_schema={"type": "object", "properties": {}}, latency=latency)


def test_defaults_and_the_header() -> None:
    p = provider()
    assert p.url == "wss://agent.deepgram.com/v1/agent/converse"
    assert p.headers() == {"Authorization": "Token dg-key"}
    think = ds.think_settings(p.options, "Be brief.", [])
    msg = ds.settings(p.options, PCMU_8K, think, greeting=None)
    assert msg["agent"]["think"] == {
        "provider": {"type": "open_ai", "model": "gpt-4o-mini"},
        "prompt": "Be brief.",
        "functions": [],
    }
    assert msg["agent"]["speak"] == {"provider": {"type": "deepgram", "model": "aura-2-thalia-en"}}
    assert "greeting" not in msg["agent"] and "context" not in msg["agent"]
    validate_client_message(msg)


def test_config_maps_to_the_three_providers() -> None:
    p = provider(
        model="claude-3-5-haiku-latest",
        voice="aura-2-andromeda-en",
        temperature=0.3,
        base_url="ws://127.0.0.1:9/v1/agent/converse",
        options={
            "think_provider": "anthropic",
            "listen_model": "nova-3",
            "language": "en",
            "speak_provider": {"speed": 1.1},
            "think_endpoint": {"url": "https://llm.example/v1", "headers": {"x": "y"}},
            "mip_opt_out": True,
            "tags": ["ava"],
        },
    )
    think = ds.think_settings(p.options, "p", [])
    msg = ds.settings(p.options, PCM16_24K, think, greeting="Hi")
    assert msg["agent"]["think"]["provider"] == {
        "type": "anthropic",
        "model": "claude-3-5-haiku-latest",
        "temperature": 0.3,
    }
    assert msg["agent"]["think"]["endpoint"] == {"url": "https://llm.example/v1", "headers": {"x": "y"}}
    assert msg["agent"]["listen"]["provider"] == {"type": "deepgram", "model": "nova-3", "language": "en"}
    assert msg["agent"]["speak"]["provider"] == {"type": "deepgram", "model": "aura-2-andromeda-en", "speed": 1.1}
    assert msg["mip_opt_out"] is True and msg["tags"] == ["ava"] and msg["agent"]["greeting"] == "Hi"
    assert msg["audio"]["input"] == {"encoding": "linear16", "sample_rate": 24000}
    validate_client_message(msg)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"keepalive_s": "often"}, "providers.dg.options.keepalive_s must be a number >= 0"),
        ({"reconnect_attempts": -1}, "providers.dg.options.reconnect_attempts must be a number >= 0"),
        ({"speak_provider": 5}, "providers.dg.options.speak_provider must be a mapping"),
        ({"vad": {"x": 1}}, "providers.dg.options: unknown option(s) vad"),
    ],
)
def test_bad_options_are_clear_errors(options: dict[str, Any], words: str) -> None:
    from engine.providers.base import ProviderError

    with pytest.raises(ProviderError, match=words.replace("(", r"\(").replace(")", r"\)")):
        provider(options=options)


def test_audio_negotiation() -> None:
    from engine.realtime.audio import negotiate

    fmts = provider().supported_formats()
    assert negotiate(PCMU_8K, fmts) == PCMU_8K and negotiate(PCMA_8K, fmts) == PCMA_8K
    assert negotiate(PCM16_16K, fmts) == PCM16_16K and negotiate(PCM16_24K, fmts) == PCM16_24K
    assert negotiate(PCM16_8K, fmts) == PCM16_16K
    assert ds.audio_settings(PCMA_8K)["output"] == {"encoding": "alaw", "sample_rate": 8000, "container": "none"}


def test_functions_defer_unless_idempotent_read_only_from_mcp_annotations() -> None:
    view = view_of(
        mcp_definition("lookup", {"readOnlyHint": True}),
        mcp_definition("set_flag", {"idempotentHint": True}),  # an idempotent write still changes state
        mcp_definition("pay", {"destructiveHint": True}),
        ToolDefinition("tool.with.dots", "dotted", parameters=(ToolParameter("a", "string"),)),
    )
    p = provider()
    fns = {f["name"]: f for f in p.render_tools(view)}
    assert "defer_until_eot" not in fns["lookup"]
    assert fns["set_flag"]["defer_until_eot"] is True and fns["pay"]["defer_until_eot"] is True
    dotted = next(n for n in fns if n.startswith("tool_with_dots"))  # renamed by the renderer, still deferred
    assert fns[dotted]["defer_until_eot"] is True
    assert p.rendered(view).names.exposed_name(dotted) == "tool.with.dots"
    validate_client_message({"type": "UpdateThink", "think": ds.think_settings(p.options, "", list(fns.values()))})
    # What `ava-engine tools --provider deepgram_agent --json` prints is exactly what the agent receives.
    assert render_declarations("deepgram_agent", view) == p.render_tools(view)


def test_context_messages_from_history() -> None:
    p = provider()
    h = History()
    h.add_message("assistant", "Hello.")
    h.add_message("user", "Weather?")
    h.add_message("system", "internal note")
    h.add(ToolCallItem("tc_1", "get_weather", {"city": "Oslo"}, 1, provider_ids=(("provider", "fc-1"),)))
    h.add(ToolResultItem("tc_1", "get_weather", "success", "cold", {"c": -3}))
    h.add(ToolCallItem("tc_2", "get_time", {}, 2))  # no result yet: not context
    h.add(ToolCallItem("tc_3", "get_time", {"_raw": "{zone"}, 3, provider_ids=(("provider", "fc-3"),)))
    h.add(ToolResultItem("tc_3", "get_time", "rejected", "invalid arguments"))
    view = view_of(ToolDefinition("get_weather", "w"), ToolDefinition("get_time", "t"))
    msgs = ds.context_messages(h.items(), p.rendered(view))
    assert msgs[:2] == [
        {"type": "History", "role": "assistant", "content": "Hello."},
        {"type": "History", "role": "user", "content": "Weather?"},
    ]
    assert msgs[2]["function_calls"] == [
        {
            "id": "fc-1",
            "name": "get_weather",
            "client_side": True,
            "arguments": '{"city": "Oslo"}',
            "response": '{"status": "success", "message": "cold", "data": {"c": -3}}',
        }
    ]
    assert msgs[3]["function_calls"][0]["arguments"] == "{zone"  # sent back as the model wrote it
    assert len(msgs) == 4
    think = ds.think_settings(p.options, "p", [])
    validate_client_message(ds.settings(p.options, PCMU_8K, think, greeting=None, context=msgs))


# ------------------------------------------------------------------------------------------------ the fake


GOOD: dict[str, Any] = {
    "type": "Settings",
    "audio": {"input": {"encoding": "mulaw", "sample_rate": 8000}},
    "agent": {
        "think": {"provider": {"type": "open_ai", "model": "gpt-4o-mini"}, "functions": []},
        "speak": {"provider": {"type": "deepgram", "model": "aura-2-thalia-en"}},
    },
}


@pytest.mark.parametrize(
    ("msg", "words"),
    [
        ({"type": "Settings"}, "rejected by the SDK types"),
        ({**GOOD, "audio": {"input": {"encoding": "ulaw", "sample_rate": 8000}}}, "'ulaw' is not one of"),
        ({**GOOD, "agnet": {}}, "keys unknown to AgentV1Settings: ['agnet']"),
        ({"type": "FunctionCallResponse", "id": "1", "name": "x", "content": {"a": 1}}, "rejected by the SDK"),
        ({"type": "FunctionCallResponse", "id": "1", "name": "x", "content": "c", "is_error": True}, "is_error"),
        ({"type": "InjectAgentMessage", "text": "hi"}, "rejected by the SDK"),
        ({"type": "UpdateInstructions", "instructions": "x"}, "unknown client message type"),
    ],
)
def test_fake_rejects_what_the_sdk_rejects_and_more(msg: dict[str, Any], words: str) -> None:
    with pytest.raises(AssertionError, match=words.replace("[", r"\[").replace("(", r"\(")):
        validate_client_message(msg)


def test_fake_lifecycle_rules() -> None:
    fake = DeepgramFake()
    fake.conn_no = 1
    with pytest.raises(AssertionError, match="KeepAlive sent before Settings"):
        fake.validate({"type": "KeepAlive"})
    fake.validate(GOOD)
    with pytest.raises(AssertionError, match="Settings sent twice"):
        fake.validate(GOOD)
    fake.outstanding["a"] = "get_weather"
    with pytest.raises(AssertionError, match="did not request"):
        fake.validate({"type": "FunctionCallResponse", "id": "zz", "name": "get_weather", "content": "{}"})
    with pytest.raises(AssertionError, match="names 'get_time'"):
        fake.validate({"type": "FunctionCallResponse", "id": "a", "name": "get_time", "content": "{}"})
    fake.validate({"type": "FunctionCallResponse", "id": "a", "name": "get_weather", "content": "{}"})
    with pytest.raises(AssertionError, match="second FunctionCallResponse"):
        fake.validate({"type": "FunctionCallResponse", "id": "a", "name": "get_weather", "content": "{}"})
    fake.cancelled.add("b")
    with pytest.raises(AssertionError, match="after FunctionCallCancelled"):
        fake.validate({"type": "FunctionCallResponse", "id": "b", "name": "get_weather", "content": "{}"})
    server_side = {"name": "crm", "parameters": {"type": "object"}, "endpoint": {"url": "https://x", "method": "post"}}
    with pytest.raises(AssertionError, match="must be client-side"):
        fake.validate({"type": "UpdateThink", "think": {**GOOD["agent"]["think"], "functions": [server_side]}})


def test_another_speak_vendor_is_taken_whole() -> None:
    eleven = {"type": "eleven_labs", "model_id": "eleven_turbo_v2_5"}
    p = provider(
        voice="aura-2-thalia-en",
        options={"speak_provider": eleven, "speak_endpoint": {"url": "wss://api.elevenlabs.io/v1/x", "headers": {}}},
    )
    msg = ds.settings(p.options, PCMU_8K, ds.think_settings(p.options, "", []), greeting=None)
    assert msg["agent"]["speak"]["provider"] == eleven
    validate_client_message(msg)
