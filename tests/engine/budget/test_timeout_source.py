"""Issue 16 A9: a timeout's message says where its limit came from, so the operator knows which number to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.budget.helpers import engine_for, session_on, settings_for, tool


@pytest.mark.parametrize(
    ("declared", "tier", "budget_fast", "expected"),
    [
        ({}, None, 500, "the engine's default tool timeout (engine.tool_timeout_ms: 50)"),
        ({"mx": 50}, None, 500, "the tool's declared max duration (max_duration_ms: 50)"),
        ({"timeout_ms": 50}, "deep", 500, "the tool's timeout (timeout_ms: 50)"),
        ({"mx": 5000}, "fast", 50, "the FAST tier's budget (budget.tiers.fast: 50)"),
    ],
)
async def test_timeout_names_its_limit(
    tmp_path: Path, declared: dict[str, Any], tier: str | None, budget_fast: int, expected: str
) -> None:
    settings = settings_for(tmp_path, ["slow"])
    settings.engine.tool_timeout_ms = 50
    settings.budget.tiers.fast = budget_fast
    engine = engine_for(settings, tool("slow", delay=5, **declared))
    session = session_on(tier, {"slow"}) if tier else None
    r = await engine.executor.execute(session, "slow", {}, allowed=frozenset({"slow"}))
    assert r.status == "timeout"
    assert r.message == f"slow did not answer within 0.05 seconds, the limit set by {expected}."
    engine.budget.turns.cancel_all()


async def test_a_limit_changed_in_place_applies_to_the_next_call(tmp_path: Path) -> None:
    """The wording of a limit is built once per value, but the values are read on every call: settings edited in
    place (the console's budget screen, tests) apply to the very next call, with the new number in its message."""
    settings = settings_for(tmp_path, ["slow"])
    settings.engine.tool_timeout_ms = 50
    settings.budget.tiers.fast = 1000
    engine = engine_for(settings, tool("slow", delay=5))
    session = session_on("fast", {"slow"})
    r = await engine.executor.execute(session, "slow", {})
    assert r.message == "slow did not answer within 0.05 seconds, the limit set by the engine's default tool " + (
        "timeout (engine.tool_timeout_ms: 50)."
    )
    settings.engine.tool_timeout_ms = 70
    r = await engine.executor.execute(session, "slow", {})
    assert r.message.endswith(
        "within 0.07 seconds, the limit set by the engine's default tool timeout (engine.tool_timeout_ms: 70)."
    )
    settings.engine.tool_timeout_ms = 30_000
    settings.budget.tiers.fast = 60
    r = await engine.executor.execute(session, "slow", {})
    assert (
        r.message
        == "slow did not answer within 0.06 seconds, the limit set by the FAST tier's budget (budget.tiers.fast: 60)."
    )
    engine.budget.turns.cancel_all()
