"""The tier selector: a table of decisions (priority order, cooldown, queue depth, fixed mode, defaults), and the
selector wired into live calls (sticky operator override, global default, cooldown on an injected clock)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.budget.selector import TurnFacts, decide, find_keyword
from engine.config.models import ContextTierConfig, SelectorConfig
from engine.events import TierChanged
from tests.engine.budget.helpers import FakeClock, engine_for, only, settings_for

CFG = SelectorConfig()
AUTO = ContextTierConfig(default="standard", mode="auto")
FAST_CTX = ContextTierConfig(default="fast", mode="auto")
FIXED_DEEP = ContextTierConfig(default="deep", mode="fixed")

CASES: list[tuple[str, dict[str, Any], str, str]] = [
    # id, facts (beyond defaults: turn 2, now 1000), expected tier, reason starts with
    (
        "override wins over everything",
        dict(override="fast", text="think carefully", waiting_callers=9),
        "fast",
        "operator override",
    ),
    ("override deep on first turn", dict(override="deep", turn=1), "deep", "operator override"),
    ("deep keyword", dict(text="Please think carefully about this"), "deep", "deep keyword 'think carefully'"),
    ("deep keyword case and spacing", dict(text="TAKE   your\ttime"), "deep", "deep keyword 'take your time'"),
    ("deep keyword beats queue", dict(text="think hard", waiting_callers=5), "deep", "deep keyword"),
    ("deep keyword on first turn", dict(text="think carefully", turn=1), "deep", "deep keyword"),
    (
        "cooldown 10 s after a deep turn",
        dict(text="think carefully", last_deep_turn_at=990.0),
        "standard",
        "deep cooldown",
    ),
    ("cooldown edge: 29.9 s", dict(text="think carefully", last_deep_turn_at=970.1), "standard", "deep cooldown"),
    ("cooldown over: exactly 30 s", dict(text="think carefully", last_deep_turn_at=970.0), "deep", "deep keyword"),
    (
        "cooldown beats queue",
        dict(text="think carefully", last_deep_turn_at=995.0, waiting_callers=5),
        "standard",
        "deep cooldown",
    ),
    ("queue depth 3 -> fast", dict(waiting_callers=3), "fast", "queue depth: 3 callers waiting"),
    ("queue depth 2 -> default", dict(waiting_callers=2), "standard", "context default"),
    ("queue beats standard keyword", dict(text="who is the captain", waiting_callers=4), "fast", "queue depth"),
    (
        "standard keyword remember",
        dict(text="do you remember me", context_tier=FAST_CTX),
        "standard",
        "standard keyword 'remember'",
    ),
    (
        "standard keyword who is",
        dict(text="Who is on call?", context_tier=FAST_CTX),
        "standard",
        "standard keyword 'who is'",
    ),
    ("keyword needs whole words", dict(text="the rulesets are fine", context_tier=FAST_CTX), "fast", "context default"),
    ("first turn standard", dict(turn=1, context_tier=FAST_CTX), "standard", "first turn"),
    ("queue beats first turn", dict(turn=1, waiting_callers=3), "fast", "queue depth"),
    ("context default fast", dict(context_tier=FAST_CTX), "fast", "context default"),
    (
        "engine default replaces context default",
        dict(context_tier=FAST_CTX, engine_default="deep"),
        "deep",
        "engine default",
    ),
    ("engine default auto -> context", dict(context_tier=FAST_CTX, engine_default="auto"), "fast", "context default"),
    (
        "fixed mode ignores keywords",
        dict(context_tier=FIXED_DEEP, text="remember", waiting_callers=9),
        "deep",
        "context default (fixed)",
    ),
    (
        "fixed mode ignores first turn",
        dict(context_tier=ContextTierConfig(default="fast", mode="fixed"), turn=1),
        "fast",
        "context default (fixed)",
    ),
    ("fixed mode yields to override", dict(context_tier=FIXED_DEEP, override="fast"), "fast", "operator override"),
    (
        "fixed mode uses engine default",
        dict(context_tier=FIXED_DEEP, engine_default="standard"),
        "standard",
        "engine default",
    ),
]


@pytest.mark.parametrize(("facts", "tier", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_selector_table(facts: dict[str, Any], tier: str, reason: str) -> None:
    base: dict[str, Any] = dict(text="", turn=2, now=1000.0, context_tier=AUTO)
    d = decide(TurnFacts(**{**base, **facts}), CFG)
    assert (d.tier, d.reason[: len(reason)]) == (tier, reason), d.reason


def test_keywords_and_thresholds_are_configurable() -> None:
    cfg = SelectorConfig(
        deep_keywords=["roll for initiative"], standard_keywords=[], deep_cooldown_s=5, queue_depth_fast=1
    )
    facts = TurnFacts(text="Roll for initiative!", turn=3, now=10.0, last_deep_turn_at=4.0)
    assert decide(facts, cfg).tier == "deep"
    assert decide(TurnFacts(text="remember", turn=3, now=0, waiting_callers=1), cfg).tier == "fast"
    assert find_keyword("anything", []) is None


# --------------------------------------------------------------------------------------- wired into calls


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def test_every_turn_runs_the_selector_and_emits_tier_changed(tmp_path: Path, clock: FakeClock) -> None:
    engine = engine_for(settings_for(tmp_path, [], tier={"default": "fast"}), clock=clock)
    sub = engine.bus.subscribe(types={"tier.changed"})
    call = await engine.start_call("c")
    await engine.user_said(call.call_id, "hello")  # first turn
    await engine.user_said(call.call_id, "hello again")  # context default
    await engine.user_said(call.call_id, "think carefully please")
    clock.advance(10)
    await engine.user_said(call.call_id, "take your time")  # cooldown
    clock.advance(30)
    await engine.user_said(call.call_id, "take your time")
    got = [(e.old, e.new, e.reason.split(":")[0].split(" '")[0]) for e in only(sub.drain(), TierChanged)]
    assert got == [
        ("fast", "standard", "first turn"),
        ("standard", "fast", "context default"),
        ("fast", "deep", "deep keyword"),
        ("deep", "standard", "deep cooldown"),
        ("standard", "deep", "deep keyword"),
    ]


async def test_queue_depth_from_the_engine(tmp_path: Path, clock: FakeClock) -> None:
    engine = engine_for(settings_for(tmp_path, []), clock=clock)
    call = await engine.start_call("c")
    engine.waiting_callers = 3
    await engine.user_said(call.call_id, "who is there")
    assert (call.tier, call.tier_reason.startswith("queue depth")) == ("fast", True)


async def test_operator_override_is_sticky_until_cleared(tmp_path: Path, clock: FakeClock) -> None:
    engine = engine_for(settings_for(tmp_path, []), clock=clock)
    call = await engine.start_call("c")
    engine.set_tier(call.call_id, "fast")
    for text in ("think carefully", "remember the rules", "hello"):
        engine.waiting_callers = 0
        await engine.user_said(call.call_id, text)
        assert (call.tier, call.tier_reason) == ("fast", "operator override")
    sub = engine.bus.subscribe(types={"tier.changed"})
    engine.set_tier(call.call_id, "auto")
    assert call.tier == "standard" and call.tier_override is None
    await engine.user_said(call.call_id, "think carefully")
    assert call.tier == "deep"
    reasons = [e.reason for e in only(sub.drain(), TierChanged)]
    assert reasons[0].startswith("operator cleared the override") and reasons[-1].startswith("deep keyword")


async def test_global_default_is_respected(tmp_path: Path, clock: FakeClock) -> None:
    engine = engine_for(settings_for(tmp_path, []), clock=clock)
    call = await engine.start_call("c")
    await engine.user_said(call.call_id, "hello")
    engine.set_tier(None, "deep")
    await engine.user_said(call.call_id, "hello")
    assert (call.tier, call.tier_reason.startswith("engine default")) == ("deep", True)
    engine.set_tier(call.call_id, "fast")
    engine.set_tier(call.call_id, "auto")
    assert call.tier == "deep"  # cleared back to the operator's global default
    with pytest.raises(ValueError, match="unknown tier"):
        engine.set_tier(None, "ludicrous")


async def test_same_tier_new_reason_emits_nothing(tmp_path: Path, clock: FakeClock) -> None:
    engine = engine_for(settings_for(tmp_path, []), clock=clock)
    call = await engine.start_call("c")
    sub = engine.bus.subscribe(types={"tier.changed"})
    rev = call.tools_revision
    await engine.user_said(call.call_id, "hello")  # standard -> standard (first turn)
    await engine.user_said(call.call_id, "remember me")  # standard keyword
    assert sub.drain() == [] and call.tools_revision == rev
    assert call.tier_reason == "standard keyword 'remember'"


PRECEDENCE: list[tuple[str, dict[str, Any], str, str]] = [
    # issue 16 A13: operator per call > operator global default > context fixed > the auto selector
    ("global default on a first turn", dict(turn=1, engine_default="fast"), "fast", "engine default (fast"),
    ("global default beats a deep keyword", dict(text="think carefully", engine_default="fast"), "fast", "engine"),
    ("global default beats the queue", dict(waiting_callers=9, engine_default="deep"), "deep", "engine default"),
    ("global default beats fixed", dict(context_tier=FIXED_DEEP, engine_default="fast", turn=1), "fast", "engine"),
    ("override beats global default", dict(override="deep", engine_default="fast"), "deep", "operator override"),
    ("fixed beats the selector on turn 1", dict(context_tier=FIXED_DEEP, turn=1), "deep", "context default (fixed)"),
]


@pytest.mark.parametrize(("facts", "tier", "reason"), [c[1:] for c in PRECEDENCE], ids=[c[0] for c in PRECEDENCE])
def test_tier_precedence(facts: dict[str, Any], tier: str, reason: str) -> None:
    base: dict[str, Any] = dict(text="", turn=2, now=1000.0, context_tier=AUTO)
    d = decide(TurnFacts(**{**base, **facts}), CFG)
    assert (d.tier, d.reason[: len(reason)]) == (tier, reason), d.reason


async def test_global_default_applies_from_a_new_calls_first_turn(tmp_path: Path, clock: FakeClock) -> None:
    engine = engine_for(settings_for(tmp_path, []), clock=clock)
    engine.set_tier(None, "fast")
    call = await engine.start_call("c")
    assert call.tier == "fast"
    await engine.user_said(call.call_id, "hello")  # the first turn: not the selector's "first turn" STANDARD
    assert (call.tier, call.tier_reason.startswith("engine default")) == ("fast", True)
