"""A tool whose input schema is broken (a server's mistake) is registered, and its calls are rejected with the reason.

Before, such schemas raised at registration (``AttributeError``) or in the middle of a call (``UnknownType``,
``PointerToNowhere``, ``TypeError``), so one bad server schema could crash discovery or a live call.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import Settings
from engine.sessions.session import CallSession
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult
from engine.tools.validation import ArgumentValidator

BROKEN: list[tuple[dict[str, Any], str]] = [
    ({"type": "object", "properties": {"a": "string"}}, "at schema.properties.a"),
    ({"type": "foo"}, "at schema.type"),
    ({"properties": [1, 2]}, "at schema.properties"),
    ({"required": "a"}, "at schema.required"),
    ({"type": "object", "properties": {"a": {"type": "integer", "minimum": "x"}}}, "at schema.properties.a.minimum"),
    ({"anyOf": "x"}, "at schema.anyOf"),
    ({"properties": {"a": {"$ref": "#/nope"}}}, "PointerToNowhere"),
    ({"$ref": "#/nope"}, "PointerToNowhere"),
]


@pytest.mark.parametrize(("schema", "where"), BROKEN)
async def test_broken_schema_rejects_calls_with_the_reason(schema: dict[str, Any], where: str) -> None:
    ran: list[dict[str, Any]] = []

    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        ran.append(args)
        return ToolResult.success("ran")

    tool = FunctionTool(ToolDefinition("odd", "d", input_schema=schema), run)
    engine = Engine(Settings.model_validate({"engine": {"http": {"enabled": False}}}), extra_tools=[tool])
    session = CallSession(call_id="c", context="c", provider="p")
    session.shown_tools = frozenset({"odd"})
    for args in ({}, {"a": 1}, {"a": None}, '{"a": "x"}'):
        r = await engine.execute_tool(session, "odd", args)
        assert r.status == "rejected" and r.message.startswith("invalid arguments for odd: the tool's input schema")
        assert where in r.message and len(r.message) < 600
    assert ran == []


def test_a_pattern_python_cannot_compile_only_fails_the_argument_that_uses_it() -> None:
    v = ArgumentValidator(
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^\\p{L}+$"}, "b": {"type": "integer"}}}
    )
    assert v.broken is None and v.problems({"b": 1}) == []
    assert v.problems({"a": "x"}) == ["a: the schema's pattern '^\\\\p{L}+$' is not a valid regular expression"]
