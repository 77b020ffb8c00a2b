"""What operators see: tools_report (shown with tier/p50/p99/badge/health, hidden with reasons), badges and the
leaderboard (``ava-engine mcp calibrate`` runs through the installed entry point in tests/cli)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.budget.tiers import badge_for
from engine.tools.base import ToolCategory
from tests.engine.budget.helpers import FakeClock, engine_for, settings_for, tool


@pytest.mark.parametrize(
    ("p50", "badge"),
    [
        (None, "Unmeasured"),
        (0.2, "Lightning"),
        (49.9, "Lightning"),
        (50, "Fast"),
        (199.9, "Fast"),
        (200, "Standard"),
        (999, "Standard"),
        (1000, "Slow"),
        (5000, "Slow"),
    ],
)
def test_badges(p50: float | None, badge: str) -> None:
    assert badge_for(p50) == badge


async def test_tools_report_for_a_context_and_tier(tmp_path: Path) -> None:
    tools = [tool("quick", mx=100), tool("deep_one", mx=3000), tool("lookup", est=10, mx=300)]
    engine = engine_for(settings_for(tmp_path, ["quick", "deep_one", "lookup", "missing"]), *tools, clock=FakeClock())
    for _ in range(5):
        await engine.executor.execute(None, "lookup", {}, allowed=frozenset({"lookup"}))
    report = engine.tools_report("c", "fast")
    assert (report["context"], report["tier"], report["provider"]) == ("c", "fast", None)
    assert [t["name"] for t in report["tools"]] == ["lookup", "quick"]  # measured p99 ~0 ms beats declared 100
    rows = {r["name"]: r for r in report["shown"]}
    assert rows["lookup"]["badge"] == "Lightning" and rows["lookup"]["samples"] == 5
    assert rows["lookup"]["p50_ms"] is not None and rows["lookup"]["health"] == "healthy"
    assert rows["quick"]["badge"] == "Unmeasured" and rows["quick"]["compatibility"] == "FAST compatible"
    assert {h["name"]: h["reason"] for h in report["hidden"]} == {
        "missing": "not available (no such tool registered)",
        "deep_one": "needs DEEP (declared max 3000 ms)",
    }
    assert report["tiers"] == {"fast": 500, "standard": 1500, "deep": 4000}
    rendered = engine.tools_report("c", "fast", provider_type="openai_chat")["tools"]
    assert [t["function"]["name"] for t in rendered] == ["lookup", "quick"]
    with pytest.raises(ValueError, match="unknown context 'nope'"):
        engine.tools_report("nope", None)
    with pytest.raises(ValueError, match="unknown tier"):
        engine.tools_report("c", "warp")


async def test_leaderboard_ranks_per_category(tmp_path: Path) -> None:
    tools = [tool("a_slow", mx=3000), tool("b_fast", mx=10), tool("c_calls", mx=100, category=ToolCategory.TELEPHONY)]
    engine = engine_for(settings_for(tmp_path, []), *tools, clock=FakeClock())
    for _ in range(5):
        await engine.executor.execute(None, "a_slow", {}, allowed=frozenset({"a_slow"}))
    board = engine.leaderboard()
    info = [(r["rank"], r["name"], r["badge"]) for r in board["information"]]
    assert info == [(1, "a_slow", "Lightning"), (2, "b_fast", "Unmeasured")]  # measured beats unmeasured
    names = [r["name"] for r in board["telephony"]]
    assert names[0] == "c_calls"  # measured beats the unmeasured built-in call-control tools
    assert sorted(names[1:]) == ["blind_transfer", "cancel_transfer", "hangup_call", "transfer"]
    assert all(r["compatibility"] == "every tier (call control)" for r in board["telephony"][1:])
