"""Gemini's OpenAPI ``parameters`` mode: parameter names Gemini's rule refuses are sent fitted to it, and the call's
arguments come back to the tool under the schema's own names (a real Gemini would answer with the fitted ones)."""

from __future__ import annotations

import re
from typing import Any

from fakebase import Reply
from fakes import FAKES
from harness import provider_config

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, Settings
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult

GEMINI_PARAM = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,63}$")
SCHEMA = {
    "type": "object",
    "properties": {"user-id": {"type": "string"}, "2fa": {"type": "string"}},
    "required": ["user-id"],
}


async def test_fitted_parameter_names_reach_the_tool_as_its_own() -> None:
    got: list[dict[str, Any]] = []

    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        got.append(dict(args))
        return ToolResult.success("found")

    fake = FAKES["gemini"]([Reply(calls=[("lookup_user", {"user_id": "u1", "_2fa": "123456"})]), Reply(text="Done.")])
    async with fake:
        settings = Settings(
            engine=EngineConfig(http=HttpConfig(enabled=False)),
            providers={"g": provider_config(fake, options={"gemini_schema": "openapi"})},
            contexts={"desk": ContextConfig(provider="g", prompt="x", tools=["lookup_user"])},
        )
        tool = FunctionTool(ToolDefinition("lookup_user", "Look a user up.", input_schema=SCHEMA), run)
        async with Engine(settings, extra_tools=[tool]) as engine:
            call = await engine.start_call("desk")
            reply = await engine.user_said(call.call_id, "who is u1?")
    assert fake.errors == [], fake.errors
    declared = fake.requests[0]["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]
    assert sorted(declared) == ["_2fa", "user_id"] and all(GEMINI_PARAM.match(n) for n in declared)
    assert got == [{"user-id": "u1", "2fa": "123456"}] and reply.text == "Done."
