"""The budget layer in a live call on the demo configuration (scripted provider): a deep keyword changes the
tier with its reason and the next turn's tool view; slow-tool announcements; turns over budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.app import Engine
from engine.budget.turns import union_length
from engine.config.models import Settings
from engine.events import AnnouncementRequested, TierChanged, TurnOverBudget
from tests.engine.budget.helpers import FakeClock, engine_for, only, session_on, settings_for, tool

ROOT = Path(__file__).resolve().parents[3]

FORECAST_INTENT = {
    "name": "forecast",
    "patterns": [r"\bforecast\b"],
    "tools": [{"name": "mcp_wx_forecast", "args": {"city": "Oslo"}}],
    "reply": "{result}",
    "error_reply": "I can't get the forecast right now.",
}


def demo_settings(tmp_path: Path) -> Settings:
    """config/default.yaml as shipped, with the demo script plus one test-local intent and one slow tool."""
    raw: dict[str, Any] = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    script = yaml.safe_load((ROOT / "config" / "scripts" / "demo.yaml").read_text())
    script["intents"].insert(0, FORECAST_INTENT)
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump(script))
    raw["providers"]["demo_script"]["script"] = str(path)
    raw["contexts"]["demo"]["tools"] = ["hangup_call", "mcp_wx_forecast"]
    raw["engine"]["http"]["port"] = 0
    return Settings.model_validate(raw)


async def test_deep_keyword_changes_tier_and_the_next_view(tmp_path: Path) -> None:
    runs: list[dict[str, Any]] = []
    forecast = tool(
        "mcp_wx_forecast",
        server="wx",
        origin_name="forecast",
        mx=3000,
        calls=runs,
        schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
    clock = FakeClock()
    engine = Engine(demo_settings(tmp_path), extra_tools=[forecast])
    engine.budget.set_clock(clock)
    sub = engine.bus.subscribe(types={"tier.changed", "tool.rejected", "tool.completed"})
    call = await engine.start_call("demo", caller_name="Sam")
    assert "mcp_wx_forecast" not in engine.tool_view(call).names  # STANDARD: forecast needs DEEP
    reply = await engine.user_said(call.call_id, "what's the forecast")
    assert reply.text == "I can't get the forecast right now." and runs == []
    assert dict(engine.tool_view(call).hidden)["mcp_wx_forecast"] == "needs DEEP (declared max 3000 ms)"
    sub.drain()

    reply = await engine.user_said(call.call_id, "think carefully: what's the forecast")
    changed = [e for e in sub.drain() if isinstance(e, TierChanged)]
    assert [(e.call_id, e.old, e.new, e.reason) for e in changed] == [
        (call.call_id, "standard", "deep", "deep keyword 'think carefully'")
    ]
    view = engine.tool_view(call)
    assert view.tier == "deep" and "mcp_wx_forecast" in view.names and len(runs) == 1
    assert reply.text == "mcp_wx_forecast ok"

    clock.advance(5)
    await engine.user_said(call.call_id, "hello")
    evs = only(sub.drain(), TierChanged)
    assert [(e.new, e.reason) for e in evs] == [("standard", "context default")]
    assert "mcp_wx_forecast" not in engine.tool_view(call).names
    await engine.end_call(call.call_id)


async def test_slow_tool_is_announced_once_per_turn(tmp_path: Path) -> None:
    slow = tool(
        "slow_a", est=400, mx=1000, slow_response_threshold_ms=100, slow_response_message="Let me look that up."
    )
    slow_b = tool("slow_b", est=400, mx=1000, slow_response_threshold_ms=100)
    engine = engine_for(settings_for(tmp_path, ["slow_a", "slow_b"]), slow, slow_b)
    sub = engine.bus.subscribe(types={"announcement.requested"})
    call = session_on("standard", {"slow_a", "slow_b"})
    engine.budget.before_turn(call, "x")
    results = await engine.executor.execute_many(call, [("slow_a", {}, "1"), ("slow_b", {}, "2")])
    engine.budget.after_turn(call)
    assert [r.status for r in results] == ["success", "success"]
    evs = only(sub.drain(), AnnouncementRequested)
    assert [(e.call_id, e.text, e.exposed_name, e.reason) for e in evs] == [
        ("call-t", "Let me look that up.", "slow_a", "slow_tool")
    ]
    assert "ai_agent_announcements_requested_total 1.0" in engine.metrics.render().decode()


async def test_a_call_still_running_past_the_threshold_is_announced(tmp_path: Path) -> None:
    lagging = tool("lagging", mx=1000, slow_response_threshold_ms=10, delay=0.2)
    quick = tool("quick", mx=1000, slow_response_threshold_ms=10_000)
    s = settings_for(tmp_path, ["lagging"], budget={"slow_response_message": "Hang on."})
    engine = engine_for(s, lagging, quick)
    sub = engine.bus.subscribe(types={"announcement.requested"})
    call = session_on("standard", {"lagging", "quick"})
    engine.budget.before_turn(call, "x")
    await engine.execute_tool(call, "quick", {})
    assert sub.drain() == []  # fast enough: the pending announcement was cancelled
    await engine.execute_tool(call, "lagging", {})
    engine.budget.after_turn(call)
    evs = only(sub.drain(), AnnouncementRequested)
    assert [(e.text, e.exposed_name, e.reason) for e in evs] == [("Hang on.", "lagging", "still_running")]


async def test_turn_over_budget_is_reported(tmp_path: Path) -> None:
    s = settings_for(tmp_path, ["step"], budget={"tiers": {"fast": 20, "standard": 50, "deep": 1000}})
    engine = engine_for(s, tool("step", mx=45, delay=0.03), clock=FakeClock())
    sub = engine.bus.subscribe(types={"turn.over_budget"})
    call = session_on("standard", {"step"})
    engine.budget.before_turn(call, "hello")  # turn 0 -> first turn: standard
    await engine.execute_tool(call, "step", {})  # two sequential rounds add up: > 50 ms
    await engine.execute_tool(call, "step", {})
    engine.budget.after_turn(call)
    evs = only(sub.drain(), TurnOverBudget)
    assert len(evs) == 1 and (evs[0].tier, evs[0].budget_ms) == ("standard", 50) and evs[0].latency_ms > 50
    assert 'ai_agent_turns_over_budget_total{tier="standard"} 1.0' in engine.metrics.render().decode()


def test_concurrent_calls_cost_the_slowest_and_rounds_add_up() -> None:
    assert union_length([(0.0, 0.03), (0.0, 0.01), (0.005, 0.02)]) == pytest.approx(0.03)  # one concurrent round
    assert union_length([(0.0, 0.03), (0.04, 0.07)]) == pytest.approx(0.06)  # two sequential rounds
    assert union_length([]) == 0.0


async def test_a_call_ended_mid_turn_leaves_no_turn_state_behind(tmp_path: Path) -> None:
    engine = Engine(demo_settings(tmp_path))
    call = await engine.start_call("demo")
    engine.budget.before_turn(call, "hello")  # a turn opened, as a realtime caller's words open one
    assert call.call_id in engine.budget.turns._turns
    await engine.end_call(call.call_id, "hangup")  # before the answer: the turn never closed
    assert call.call_id not in engine.budget.turns._turns
