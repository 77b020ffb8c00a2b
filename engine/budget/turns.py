"""Per-turn accounting: what a turn's tools cost against its tier, and the once-per-turn slow-tool announcement.

Calls in one model turn run concurrently, and a provider may run several tool rounds in a turn, so a turn's
tool time is the length of the union of its calls' [start, end] intervals: concurrent calls cost the slowest,
sequential rounds add up. A turn whose tool time exceeds its tier's budget emits ``TurnOverBudget`` and counts
in ``ai_agent_turns_over_budget_total``.

A slow-tool announcement (``AnnouncementRequested``, spoken by the voice layer) is requested at most once per
turn: at once when a tool whose effective p50 (measured, else declared) exceeds its slow-response threshold
starts, or when any call is still running once that threshold has passed.

The "still running" checks cost no timer per call: calls wait in one lane per threshold, in the order they started
(so a lane's first call is its next one due), and each lane holds one timer on the shared ``TimerWheel``, armed for
its first call; a call that finishes leaves its lane with one dict delete.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from engine.core.running_task import current_task
from engine.events import AnnouncementRequested, EventBus, TurnOverBudget
from engine.sessions.session import CallSession
from engine.tools.base import ToolDefinition
from engine.tools.progress import with_progress
from engine.tools.timers import RESOLUTION, Timer, TimerWheel


@dataclass
class _TurnState:
    turn: int
    tier: str
    #: The [start, end] of each tool call of the turn; None for calls outside any turn (a realtime model calling a
    #: tool before the caller's words were heard, a call with no turns): nothing would ever report their time.
    intervals: list[tuple[float, float]] | None = field(default_factory=list)
    announced: bool = False


class _Running(NamedTuple):
    """A call in flight. A named tuple: one is built for every tool call, and a tuple costs a fraction of an
    object with an ``__init__``."""

    call_id: str
    definition: ToolDefinition
    started: float  # on the tracker's timer (perf_counter): the turn's intervals
    message: str
    #: The lane of its slow-response threshold while its check is pending, else None.
    lane: dict[Any, _Running] | None
    due: float  # when that check is due, on the tracker's timer


#: ``tuple.__new__``: builds a ``_Running`` from its fields without the named tuple's Python-level ``__new__``.
_new_running = tuple.__new__


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by the intervals (overlaps counted once)."""
    total, cur_start, cur_end = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_end is None or s > cur_end:
            if cur_end is not None and cur_start is not None:
                total += cur_end - cur_start
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None and cur_start is not None:
        total += cur_end - cur_start
    return total


class TurnTracker:
    def __init__(
        self,
        bus: EventBus,
        budget_ms: Callable[[str], int],
        on_over_budget: Callable[[str], None],
        on_announce: Callable[[], None],
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.bus = bus
        self.budget_ms = budget_ms
        self.on_over_budget = on_over_budget
        self.on_announce = on_announce
        self.timer = timer
        self._turns: dict[str, _TurnState] = {}
        self._running: dict[Any, _Running] = {}
        #: Calls whose "still running" check is pending, by threshold (seconds), in the order they started.
        self._lanes: dict[float, dict[Any, _Running]] = {}
        #: Each non-empty lane's timer, armed for its first call.
        self._lane_timers: dict[float, Timer] = {}
        #: The one loop timer behind every lane.
        self.wheel = TimerWheel()

    def begin(self, session: CallSession) -> None:
        self._turns[session.call_id] = _TurnState(session.turn, session.tier)

    def started(
        self,
        session: CallSession,
        d: ToolDefinition,
        expected_p50_ms: float | None,
        threshold_ms: int,
        message: str,
        task: asyncio.Task[Any] | None = None,
    ) -> None:
        """A tool call of ``session`` is about to run in ``task`` (None: the current task)."""
        call_id = session.call_id
        state = self._turns.get(call_id)
        if state is None:  # outside a turn: only its once-only announcement is kept, until a turn begins
            state = self._turns[call_id] = _TurnState(session.turn, session.tier, None)
        if task is None:
            task = current_task()
        if expected_p50_ms is not None and expected_p50_ms > threshold_ms:
            self._announce(state, call_id, d, message, "slow_tool")
        elif not state.announced and task is not None:
            delay = threshold_ms / 1000
            lane = self._lanes.get(delay)
            if lane is None:
                lane = self._lanes[delay] = {}
            now = self.timer()
            running = _new_running(_Running, (call_id, d, now, message, lane, now + delay))
            lane[task] = running
            self._running[task] = running
            timer = self._lane_timers.get(delay)
            if timer is None or timer.cancelled:  # none yet, or the wheel dropped it (a new loop)
                loop = task.get_loop()
                self._lane_timers[delay] = self.wheel.call_later(delay, self._lane_due, (delay, loop), loop)
            return
        self._running[task] = _new_running(_Running, (call_id, d, self.timer(), message, None, 0.0))

    def finished(self, task: asyncio.Task[Any] | None = None) -> None:
        """The tool call run by ``task`` (None: the current task) has completed."""
        if task is None:
            task = current_task()
        running = self._running.pop(task, None)
        if running is None:
            return
        lane = running.lane
        if lane is not None:
            lane.pop(task, None)  # its lane's timer stays armed: it finds the call gone and moves on
        state = self._turns.get(running.call_id)
        if state is not None and state.intervals is not None:
            state.intervals.append((running.started, self.timer()))

    def _lane_due(self, lane_at: tuple[float, asyncio.AbstractEventLoop]) -> None:
        """The timer of the lane of ``delay`` fired: check every call in it that is due, re-arm for the next one."""
        delay, loop = lane_at
        self._lane_timers.pop(delay, None)
        lane = self._lanes.get(delay)
        now = self.timer()
        while lane:
            task = next(iter(lane))
            running = lane[task]
            if running.due > now + RESOLUTION:  # the loop's clock may run a hair ahead of the tracker's: wait on
                self._lane_timers[delay] = self.wheel.call_later(running.due - now, self._lane_due, lane_at, loop)
                return
            del lane[task]
            self._still_running(task, running.call_id, running.definition, running.message)

    def _still_running(self, task: Any, call_id: str, d: ToolDefinition, message: str) -> None:
        state = self._turns.get(call_id)
        if task is not None and task.done():  # cancelled mid-call: completion never came
            self._running.pop(task, None)
            return
        if task in self._running and state is not None:  # what the server said of its progress, when it did
            self._announce(state, call_id, d, with_progress(message, task), "still_running")

    def _announce(self, state: _TurnState, call_id: str, d: ToolDefinition, message: str, reason: str) -> None:
        if state.announced:
            return
        state.announced = True
        self.on_announce()
        self.bus.publish(AnnouncementRequested(call_id=call_id, text=message, exposed_name=d.name, reason=reason))

    def end(self, session: CallSession) -> float:
        """Close the turn; returns its tool time in ms (and reports it when over the tier's budget)."""
        state = self._turns.pop(session.call_id, None)
        if state is None or not state.intervals:
            return 0.0
        spent_ms = union_length(state.intervals) * 1000
        budget = self.budget_ms(state.tier)
        if spent_ms > budget:
            self.on_over_budget(state.tier)
            self.bus.publish(
                TurnOverBudget(
                    call_id=session.call_id, tier=state.tier, budget_ms=budget, latency_ms=round(spent_ms, 3)
                )
            )
        return spent_ms

    def forget(self, call_id: str) -> None:
        self._turns.pop(call_id, None)

    def cancel_all(self) -> None:
        self.wheel.clear()
        self._running.clear()
        self._lanes.clear()
        self._lane_timers.clear()
        self._turns.clear()
