"""Engine.execute_tool: allowlist, parsing, validation, timeout, safe errors, events, metrics, concurrency."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.config.models import Settings
from engine.events import ToolRejected
from engine.sessions.session import CallSession
from engine.tools.base import FunctionTool, ToolDefinition, ToolResult
from tests.engine.core.helpers import echo_tool, engine_with


def make_session(shown: set[str]) -> CallSession:
    s = CallSession(call_id="call-x", context="c", provider="s")
    s.shown_tools = frozenset(shown)
    return s


@pytest.fixture
def settings() -> Settings:
    return Settings()


async def test_success_emits_events_and_metrics(settings: Settings) -> None:
    engine = engine_with(settings, echo_tool())
    sub = engine.bus.subscribe()
    r = await engine.execute_tool(make_session({"echo"}), "echo", {"text": "hi"}, tool_call_id="tc_1")
    assert (r.status, r.message) == ("success", "echo hi")
    types = [e.type for e in sub.drain()]
    assert types == ["tool.requested", "tool.completed"]
    text = engine.metrics.render().decode()
    assert 'ai_agent_mcp_tool_calls_total{server="builtin",status="success",tool="echo"} 1.0' in text
    assert "ai_agent_mcp_tool_latency_seconds_bucket" in text


async def test_unshown_tool_is_rejected_and_never_runs(settings: Settings) -> None:
    ran: list[int] = []

    async def run(args: dict, ctx: object) -> ToolResult:
        ran.append(1)
        return ToolResult.success("ran")

    engine = engine_with(settings, FunctionTool(ToolDefinition("secret_tool", "d"), run))
    sub = engine.bus.subscribe()
    r = await engine.execute_tool(make_session({"echo"}), "secret_tool", {})
    assert r.status == "rejected" and "not offered on this call" in r.message
    assert ran == []
    evs = sub.drain()
    assert [e.type for e in evs] == ["tool.rejected"]
    assert isinstance(evs[0], ToolRejected) and evs[0].exposed_name == "secret_tool"


async def test_unknown_tool_even_if_shown_is_rejected(settings: Settings) -> None:
    engine = engine_with(settings)
    r = await engine.execute_tool(make_session({"ghost"}), "ghost", {})
    assert r.status == "rejected" and "no longer available" in r.message


async def test_malformed_json_rejected_with_parser_message(settings: Settings) -> None:
    engine = engine_with(settings, echo_tool())
    r = await engine.execute_tool(make_session({"echo"}), "echo", '{"text": "hi"')
    assert r.status == "rejected"
    assert "not valid JSON" in r.message and "column" in r.message


async def test_invalid_arguments_name_every_violation(settings: Settings) -> None:
    engine = engine_with(settings, echo_tool())
    r = await engine.execute_tool(make_session({"echo"}), "echo", '{"text": 5, "loud": true}')
    assert r.status == "rejected"
    assert "text: expected string, got integer" in r.message
    assert "loud: is not an argument of this tool" in r.message


async def test_timeout(settings: Settings) -> None:
    tool = echo_tool(delay=5)
    engine = engine_with(settings, tool)
    engine.settings.engine.tool_timeout_ms = 50
    r = await engine.execute_tool(make_session({"echo"}), "echo", {"text": "x"})
    assert r.status == "timeout" and "did not answer" in r.message


async def test_exception_becomes_safe_error(settings: Settings, tmp_path: Path) -> None:
    s = Settings.model_validate({"asterisk": {"password": "sk-CANARY-123456"}})
    engine = engine_with(s, echo_tool(fail=RuntimeError("boom with sk-CANARY-123456 inside")))
    r = await engine.execute_tool(make_session({"echo"}), "echo", {"text": "x"})
    assert r.status == "error"
    assert "RuntimeError" in r.message and "sk-CANARY" not in r.message
    assert "Traceback" not in r.message


async def test_parallel_calls_run_concurrently_and_keep_order(settings: Settings) -> None:
    order: list[str] = []
    started = asyncio.Event()
    count = 0

    def make(name: str, delay: float) -> FunctionTool:
        async def run(args: dict, ctx: object) -> ToolResult:
            nonlocal count
            count += 1
            if count == 3:
                started.set()
            await started.wait()  # every call must be in flight at once, or this deadlocks (→ timeout)
            await asyncio.sleep(delay)
            order.append(name)
            return ToolResult.success(name)

        return FunctionTool(ToolDefinition(name, "d"), run)

    engine = engine_with(settings, make("slow", 0.05), make("mid", 0.02), make("quick", 0))
    engine.settings.engine.tool_timeout_ms = 5000
    session = make_session({"slow", "mid", "quick"})
    results = await engine.executor.execute_many(
        session, [("slow", {}, "tc_1"), ("mid", {}, "tc_2"), ("quick", {}, "tc_3")]
    )
    assert [r.message for r in results] == ["slow", "mid", "quick"]
    assert order == ["quick", "mid", "slow"]


async def test_result_that_is_not_a_toolresult_is_an_error(settings: Settings) -> None:
    async def run(args: dict, ctx: object) -> ToolResult:
        return "oops"  # type: ignore[return-value]

    engine = engine_with(settings, FunctionTool(ToolDefinition("bad", "d"), run))
    r = await engine.execute_tool(make_session({"bad"}), "bad", {})
    assert r.status == "error" and "not a ToolResult" in r.message
