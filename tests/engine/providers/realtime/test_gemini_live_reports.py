"""Gemini Live keeps the rules the other realtime adapters keep: a server message of a kind the adapter does not handle
is counted (``ai_agent_provider_events_ignored_total``) and logged once, and in ``gemini_schema: openapi`` mode a
call's arguments reach the tool under the schema's own parameter names (Gemini was given names fitted to its rule)."""

from __future__ import annotations

from typing import Any

from realtime_gemini_fake import GeminiLiveFake, GeminiRig

from engine.realtime.session import ResponseDone
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult

SCHEMA = {
    "type": "object",
    "properties": {"user-id": {"type": "string"}, "2fa": {"type": "string"}},
    "required": ["user-id"],
}


async def test_an_unknown_message_kind_is_counted_not_dropped_silently() -> None:
    async with GeminiLiveFake() as fake:
        async with GeminiRig(fake, [], []) as r:
            await fake.send({"somethingNew": {"x": 1}})
            await fake.send({"somethingNew": {"x": 2}})
            await fake.turn_complete()  # a later message: both unknown ones were read before it
            await r.wait_event(lambda e: isinstance(e, ResponseDone))
            r.engine.metrics.render()  # tallies move into the Prometheus children when the registry is collected
            count = r.engine.metrics.registry.get_sample_value(
                "ai_agent_provider_events_ignored_total", {"provider": "gem", "type": "somethingNew"}
            )
    assert count == 2
    assert fake.errors == []


async def test_fitted_parameter_names_reach_the_tool_as_its_own() -> None:
    got: list[dict[str, Any]] = []

    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        got.append(dict(args))
        return ToolResult.success("found")

    tool = FunctionTool(ToolDefinition("lookup_user", "Look a user up.", input_schema=SCHEMA), run)
    async with GeminiLiveFake() as fake:
        async with GeminiRig(fake, [tool], ["lookup_user"], options={"gemini_schema": "openapi"}):
            setup = (await fake.wait_for(lambda m: isinstance(m, dict) and "setup" in m))["setup"]
            (decl,) = setup["tools"][0]["functionDeclarations"]
            assert sorted(decl["parameters"]["properties"]) == ["_2fa", "user_id"]
            await fake.tool_call(("call-1", "lookup_user", {"user_id": "u1", "_2fa": "123456"}))
            await fake.wait_for(lambda m: isinstance(m, dict) and "toolResponse" in m)
    assert got == [{"user-id": "u1", "2fa": "123456"}]
    assert fake.errors == []
