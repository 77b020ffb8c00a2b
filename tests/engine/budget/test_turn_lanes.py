"""The turn tracker's "still running" checks: calls wait in one lane per threshold behind one wheel timer, and each
call is checked when its own threshold has passed — not its lane's first call's, and not after it finished."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from engine.budget.turns import TurnTracker
from engine.events import AnnouncementRequested, EventBus
from engine.sessions.session import CallSession
from engine.tools.base import ToolDefinition
from tests.waiting import wait_until


def call(call_id: str) -> CallSession:
    return CallSession(call_id=call_id, context="c", provider="p")


def tracker() -> tuple[TurnTracker, Any]:
    bus = EventBus()
    sub = bus.subscribe(types={AnnouncementRequested.type})
    return TurnTracker(bus, lambda tier: 1000, lambda tier: None, lambda: None), sub


async def run_for(turns: TurnTracker, session: CallSession, name: str, seconds: float, threshold_ms: int) -> None:
    turns.started(session, ToolDefinition(name, "t"), None, threshold_ms, f"{name} is slow")
    await asyncio.sleep(seconds)
    turns.finished()


async def test_each_call_is_checked_at_its_own_threshold() -> None:
    turns, sub = tracker()
    # Margins a loaded machine keeps: the quick call only yields once, its threshold is 200 ms away.
    quick = asyncio.create_task(run_for(turns, call("a"), "quick", 0, 200))  # arms the lane for 200 ms from now
    await asyncio.sleep(0.1)
    slow_started = time.time()
    slow = asyncio.create_task(run_for(turns, call("b"), "slow", 0.45, 200))  # due ~100 ms after the lane's timer
    await asyncio.gather(quick, slow)
    (announced,) = sub.drain()
    assert (announced.call_id, announced.exposed_name, announced.reason) == ("b", "slow", "still_running")
    assert announced.ts - slow_started >= 0.199  # its own threshold, not the first timer's (~100 ms in)
    assert not turns._running and not any(turns._lanes.values())  # nothing left behind


async def test_calls_that_finish_in_time_leave_their_lane_and_are_never_announced() -> None:
    turns, sub = tracker()
    session = call("c")
    # Each call yields once and ends; the threshold leaves a loaded machine half a second for that (a 30 ms one
    # flaked in CI: a 5 ms sleep overran it).
    await asyncio.gather(*(run_for(turns, session, f"t{i}", 0, 500) for i in range(20)))
    assert not any(turns._lanes.values())
    # the later signal: a call in the same lane, still running past its threshold, which passes after all of theirs
    # (the lane's timer fires for them first and finds nobody)
    turns.started(call("m"), ToolDefinition("marker", "t"), None, 500, "marker is slow")
    announced: list[AnnouncementRequested] = []

    def any_announced() -> bool:
        announced.extend(sub.drain())
        return bool(announced)

    await wait_until(any_announced, what="the marker's announcement")
    turns.finished()
    assert [(e.call_id, e.exposed_name) for e in announced] == [("m", "marker")]


async def test_lanes_of_different_thresholds_each_announce_once_per_turn() -> None:
    turns, sub = tracker()
    session = call("d")
    await asyncio.gather(run_for(turns, session, "long", 0.08, 50), run_for(turns, session, "short", 0.08, 20))
    (announced,) = sub.drain()  # the turn's one announcement: the call whose threshold passed first
    assert announced.exposed_name == "short"


async def test_calls_outside_a_turn_keep_no_time_and_the_next_turn_counts_only_its_own() -> None:
    """A call before any turn (a realtime model calling a tool before the caller was heard) keeps only the call's
    once-only announcement: its time would never be reported (a beginning turn starts afresh), so none is kept."""
    turns, _ = tracker()
    session = call("e")
    for _ in range(3):
        await run_for(turns, session, "early", 0.1, 5000)  # 300 ms outside a turn
    assert turns._turns["e"].intervals is None
    turns.begin(session)
    await run_for(turns, session, "inside", 0, 5000)  # yields once
    assert 0 < turns.end(session) < 300  # the turn's own call only
