"""Tiers, health and enforcement: effective latency rules, the tier filter's order and reasons, degradation and
recovery through the real execution path, stripped tools rejected, and the timeout clamp."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.budget.stats import WindowStats
from engine.budget.tiers import ToolStatus, classify
from engine.config.models import BudgetConfig
from engine.events import ToolRejected
from engine.sessions.session import CallSession
from engine.tools.base import LatencyMeta, ToolDefinition, ToolResult
from tests.engine.budget.helpers import FakeClock, engine_for, session_on, settings_for, tool

CFG = BudgetConfig()
NONE = WindowStats(0, None, None, 0)


def status_of(lat: LatencyMeta, window: WindowStats = NONE, recent: WindowStats | None = None) -> ToolStatus:
    d = ToolDefinition("t", "d", latency=lat)
    return classify(d, ("local", "builtin", "t"), window, recent or window, CFG, exempt=False)


@pytest.mark.parametrize(
    ("lat", "window", "tier", "source"),
    [
        (LatencyMeta(), NONE, "standard", "no latency information"),
        (LatencyMeta(max_duration_ms=400), NONE, "fast", "declared max 400 ms"),
        (LatencyMeta(max_duration_ms=501), NONE, "standard", "declared max 501 ms"),
        (LatencyMeta(estimated_duration_ms=100), NONE, "fast", "declared p50 100 ms × 3"),
        (LatencyMeta(estimated_duration_ms=200), NONE, "standard", "declared p50 200 ms × 3"),
        (LatencyMeta(estimated_duration_ms=100, max_duration_ms=3000), NONE, "deep", "declared max 3000 ms"),
        # measured p99 replaces declared values once there are min_samples (5) samples
        (LatencyMeta(max_duration_ms=3000), WindowStats(5, 20.0, 300.0, 0), "fast", "p99 300 ms"),
        (LatencyMeta(max_duration_ms=3000), WindowStats(4, 20.0, 300.0, 0), "deep", "declared max 3000 ms"),
        (LatencyMeta(), WindowStats(50, 900.0, 2300.0, 0), "deep", "p99 2300 ms"),
    ],
)
def test_effective_latency_and_tier(lat: LatencyMeta, window: WindowStats, tier: str, source: str) -> None:
    s = status_of(lat, window)
    assert (s.tier, s.source) == (tier, source)


def test_too_slow_for_any_tier_is_hidden_with_reason() -> None:
    s = status_of(LatencyMeta(max_duration_ms=9000))
    assert s.tier is None and s.hidden_reason == "too slow for any tier (declared max 9000 ms > DEEP 4000 ms)"
    assert not s.visible_in("deep")


def test_health_states() -> None:
    lat = LatencyMeta(max_duration_ms=400)
    degraded = status_of(lat, recent=WindowStats(10, 10.0, 20.0, 4))
    assert (degraded.health, degraded.base_tier, degraded.tier) == ("degraded", "fast", "standard")
    assert degraded.reason_hidden("fast").endswith("demoted one tier: error rate 40% over the last 10 calls")
    at_threshold = status_of(lat, recent=WindowStats(10, 10.0, 20.0, 3))  # 30 % is not "more than 30 %"
    assert at_threshold.health == "healthy"
    unhealthy = status_of(lat, recent=WindowStats(10, 10.0, 20.0, 6))
    assert (unhealthy.health, unhealthy.tier) == ("unhealthy", None)
    slow = status_of(lat, window=WindowStats(3, 10, 20, 0), recent=WindowStats(10, 300.0, 450.0, 0))
    assert slow.health == "degraded" and "p99 450 ms over its declared max 400 ms" in slow.health_reason
    few = status_of(lat, recent=WindowStats(4, 10.0, 20.0, 4))  # too few samples to judge
    assert few.health == "healthy"
    deep_degraded = status_of(LatencyMeta(max_duration_ms=3000), recent=WindowStats(10, 1, 2, 4))
    assert deep_degraded.tier is None and deep_degraded.hidden_reason.startswith("degraded beyond DEEP")


async def test_view_per_tier_is_fastest_first_with_hidden_reasons(tmp_path: Path) -> None:
    tools = [
        tool("slow_lookup", mx=1200),
        tool("quick", mx=80),
        tool("deep_think", mx=3000),
        tool("quicker", est=5),
        tool("mystery"),
    ]
    names = [t.name for t in tools]
    engine = engine_for(settings_for(tmp_path, [*names, "hangup_call"]), *tools)
    fast = engine.context_view("c", "fast")
    assert [t.name for t in fast.tools] == ["quicker", "quick", "hangup_call"]  # call control: every tier
    hidden = dict(fast.hidden)
    assert hidden["slow_lookup"] == "needs STANDARD (declared max 1200 ms)"
    assert hidden["deep_think"] == "needs DEEP (declared max 3000 ms)"
    assert hidden["mystery"] == "needs STANDARD (no latency information)"
    std = engine.context_view("c", "standard")
    assert [t.name for t in std.tools] == ["quicker", "quick", "hangup_call", "slow_lookup", "mystery"]
    deep = engine.context_view("c", "deep")
    assert deep.tools[-2].name == "deep_think" and deep.hidden == ()
    assert engine.context_view("c", "deep") is deep  # cached until something changes


async def test_measured_latency_moves_a_tool_and_bumps_the_revision(tmp_path: Path) -> None:
    t = tool("lookup", mx=3000)
    engine = engine_for(settings_for(tmp_path, ["lookup"]), t)
    assert dict(engine.context_view("c", "fast").hidden)["lookup"] == "needs DEEP (declared max 3000 ms)"
    rev = engine.budget.board.revision
    for _ in range(5):
        r = await engine.executor.execute(None, "lookup", {}, allowed=frozenset({"lookup"}))
        assert r.status == "success"
    assert engine.budget.board.revision > rev
    assert [x.name for x in engine.context_view("c", "fast").tools] == ["lookup"]


async def test_degradation_then_recovery(tmp_path: Path) -> None:
    clock = FakeClock()
    failing = {"on": True}
    t = tool("flaky", mx=300, outcome=lambda a: ToolResult.error("boom") if failing["on"] else ToolResult.success("ok"))
    s = settings_for(tmp_path, ["flaky"], budget={"window": 10, "min_samples": 5, "health_horizon_s": 60})
    engine = engine_for(s, t, clock=clock)
    call = session_on("fast", {"flaky"})
    for i in range(10):
        failing["on"] = i < 4  # 4 errors in 10 calls: 40 % > 30 %
        await engine.execute_tool(call, "flaky", {})
    st = engine.budget.status("flaky")
    assert st is not None and (st.health, st.tier) == ("degraded", "standard")
    view = engine.context_view("c", "fast")
    assert view.tools == () and "demoted one tier: error rate 40%" in dict(view.hidden)["flaky"]
    assert [x.name for x in engine.context_view("c", "standard").tools] == ["flaky"]
    failing["on"] = False
    for _ in range(4):  # the errors leave the window
        await engine.execute_tool(session_on("standard", {"flaky"}), "flaky", {})
    st = engine.budget.status("flaky")
    assert st is not None and (st.health, st.tier) == ("healthy", "fast")
    assert [x.name for x in engine.context_view("c", "fast").tools] == ["flaky"]


async def test_unhealthy_tool_recovers_by_time_while_hidden(tmp_path: Path) -> None:
    clock = FakeClock()
    t = tool("down", mx=300, outcome=lambda a: ToolResult.error("down"))
    s = settings_for(tmp_path, ["down"], budget={"window": 10, "min_samples": 5, "health_horizon_s": 60})
    engine = engine_for(s, t, clock=clock)
    for _ in range(5):
        await engine.execute_tool(session_on("deep", {"down"}), "down", {})
    view = engine.context_view("c", "deep")
    assert view.tools == () and dict(view.hidden)["down"].startswith("unhealthy: error rate 100%")
    clock.advance(30)
    assert engine.context_view("c", "deep") is view  # nothing changed yet: the cached view
    clock.advance(31)  # the errors are older than the horizon: half-open, shown again
    assert [x.name for x in engine.context_view("c", "deep").tools] == ["down"]


async def test_stripped_tool_call_is_rejected_through_a_live_call(tmp_path: Path) -> None:
    calls: list[dict] = []
    deep = tool("forecast", mx=3000, calls=calls)
    intents = [
        {
            "name": "wx",
            "patterns": ["forecast"],
            "tools": [{"name": "forecast"}],
            "reply": "{result}",
            "error_reply": "no: {result}",
        }
    ]
    engine = engine_for(settings_for(tmp_path, ["forecast"], intents, tier={"default": "fast"}), deep)
    sub = engine.bus.subscribe(types={"tool.rejected", "tool.completed"})
    call = await engine.start_call("c")
    await engine.user_said(call.call_id, "hello")
    reply = await engine.user_said(call.call_id, "the forecast")  # fast turn: forecast is not shown
    assert call.tier == "fast" and "forecast" not in engine.tool_view(call).names
    evs = sub.drain()
    assert [e.type for e in evs] == ["tool.rejected"]
    assert isinstance(evs[0], ToolRejected) and "not offered on this call" in evs[0].reason
    assert calls == [] and reply.text.startswith("no: ")
    direct = await engine.execute_tool(call, "forecast", {})
    assert direct.status == "rejected" and calls == []


async def test_timeout_is_clamped_to_the_tier_budget(tmp_path: Path) -> None:
    slow = tool("slow", mx=5000)
    own = tool("own", timeout_ms=200)
    engine = engine_for(settings_for(tmp_path, []), slow, own)
    hooks = engine.budget

    def limit_s(name: str, session: CallSession | None) -> float:
        entry = engine.registry.get(name)
        assert entry is not None
        began = hooks.begin(entry, {}, session, None, engine.settings)  # the hook every call passes before it runs
        assert isinstance(began, tuple)
        return began[0]

    assert limit_s("slow", session_on("fast", set())) == 0.5
    assert limit_s("slow", session_on("standard", set())) == 1.5
    assert limit_s("slow", session_on("deep", set())) == 4.0
    assert limit_s("slow", None) == 5.0  # probes and CLI calls: the tool's own timeout
    assert limit_s("own", session_on("deep", set())) == 0.2
    assert limit_s("hangup_call", session_on("fast", set())) == 1.0
    hooks.turns.cancel_all()


async def test_a_fast_call_is_bounded_by_the_fast_budget(tmp_path: Path) -> None:
    s = settings_for(tmp_path, ["sleepy"], budget={"tiers": {"fast": 50, "standard": 100, "deep": 200}})
    engine = engine_for(s, tool("sleepy", est=1, mx=40, delay=5))  # declares FAST, hangs
    r = await engine.execute_tool(session_on("fast", {"sleepy"}), "sleepy", {})
    assert r.status == "timeout" and "0.04 seconds" in r.message
