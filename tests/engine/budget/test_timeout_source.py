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
    assert r.message == f"slow did not answer within 0.05 seconds (limit: {expected})."
    engine.budget.turns.cancel_all()
