"""Structured results checked at the engine's speed (engine.mcp.result_check): a result the engine's compiled
validator passes needs no jsonschema run; everything else still gets the SDK's own check and its error."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from jsonschema.validators import validator_for as jsonschema_for
from mcp import types

from engine.mcp.result_check import ResultChecks
from tests.engine.mcp.helpers import FIXTURES
from tests.engine.mcp.helpers import settings as engine_settings
from tests.engine.mcp.test_real_peers import call
from tests.engine.tools.test_validator_agreement import schema_and_instance

WEATHER = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "sky": {"type": "string"}},
    "required": ["temperature", "sky"],
}


def tool(name: str, output: dict[str, Any] | None) -> types.Tool:
    return types.Tool(name=name, input_schema={"type": "object"}, output_schema=output)


def result(structured: dict[str, Any] | None) -> types.CallToolResult:
    return types.CallToolResult(content=[], structured_content=structured)


def installed(*tools: types.Tool) -> tuple[ResultChecks, list[str]]:
    """Checks installed on a session whose own (the SDK's) check records the tools it was asked about."""
    asked: list[str] = []

    async def sdk_check(name: str, r: types.CallToolResult) -> None:
        asked.append(name)

    session = SimpleNamespace(validate_tool_result=sdk_check)
    checks = ResultChecks()
    checks.install(session)
    assert session.validate_tool_result == checks.check
    checks.learn(tools)
    return checks, asked


async def test_a_valid_result_needs_no_sdk_check_and_anything_else_gets_it() -> None:
    unusual = {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}  # outside the fast subset
    checks, asked = installed(tool("weather", WEATHER), tool("plain", None), tool("odd", unusual))
    await checks.check("weather", result({"temperature": 21.5, "sky": "sunny"}))
    await checks.check("plain", result(None))  # no schema: nothing to check, as in the SDK
    assert asked == []
    await checks.check("weather", result({"temperature": "hot", "sky": "clear"}))  # wrong: the SDK words it
    await checks.check("weather", result(None))  # no structured content: the SDK's error
    await checks.check("odd", result({"a": 1}))
    await checks.check("unlisted", result({"x": 1}))  # the SDK re-lists, or warns
    assert asked == ["weather", "weather", "odd", "unlisted"]


async def test_a_new_listing_replaces_schemas_and_forgets_tools_gone() -> None:
    checks, asked = installed(tool("weather", WEATHER))
    sample = result({"temperature": 21.5, "sky": "sunny"})
    await checks.check("weather", sample)
    assert asked == []
    checks.learn([tool("weather", {**WEATHER, "properties": {"temperature": {"type": "string"}}})])
    await checks.check("weather", sample)  # invalid under the new schema: not passed by the old validator
    checks.learn([])
    await checks.check("weather", sample)
    assert asked == ["weather", "weather"]


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(schema_and_instance())
def test_whatever_the_engine_passes_the_sdk_check_passes_too(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The shortcut is sound: the SDK validates output with plain jsonschema (formats not asserted, Python
    patterns); the engine's stricter rules may doubt a result it would pass (the SDK then decides), never the
    reverse."""
    schema, instance = case
    checks, asked = installed(tool("t", schema))
    step = checks.check("t", result(instance))
    with pytest.raises(StopIteration):  # nothing in it waits: it ends on its first step (no event loop per example)
        step.send(None)
    if not asked:
        assert jsonschema_for(schema)(schema).is_valid(instance), (schema, instance)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_real_engine_checks_results_itself_on_both_protocol_eras(make_engine: Any, mode: str) -> None:
    cfg = {
        "transport": "stdio",
        "command": [sys.executable, str(FIXTURES / "structured_server.py")],
        "connect_timeout_ms": 8000,
        "mode": mode,
    }
    engine = await make_engine(engine_settings({"st": cfg}))
    conn = engine.mcp.supervisors["st"].conn
    assert conn.client.session.validate_tool_result == conn.results.check
    r = await call(engine, "mcp_st_weather", {"city": "Oslo"})
    assert r.status == "success" and r.data == {"temperature": 21.5, "sky": "sunny in Oslo"}
    r = await call(engine, "mcp_st_liar", {})  # the engine's check doubts it; the SDK's names the path
    assert r.message == (
        "mcp_st_liar returned a result that does not match its output schema at $.temperature: "
        "'hot' is not of type 'number'"
    )
