"""Per-turn accounting: what a turn's tools cost against its tier, and the once-per-turn slow-tool announcement.

Calls in one model turn run concurrently, and a provider may run several tool rounds in a turn, so a turn's
tool time is the length of the union of its calls' [start, end] intervals: concurrent calls cost the slowest,
sequential rounds add up. A turn whose tool time exceeds its tier's budget emits ``TurnOverBudget`` and counts
in ``ai_agent_turns_over_budget_total``.

A slow-tool announcement (``AnnouncementRequested``, spoken by the voice layer) is requested at most once per
turn: at once when a tool whose effective p50 (measured, else declared) exceeds its slow-response threshold
starts, or when any call is still running once that threshold has passed.

The "still running" checks share one loop timer (``engine.tools.timers.TimerWheel``) instead of a ``call_later``
per call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.events import AnnouncementRequested, EventBus, TurnOverBudget
from engine.sessions.session import CallSession
from engine.tools.base import ToolDefinition
from engine.tools.progress import with_progress
from engine.tools.timers import Timer, TimerWheel


@dataclass
class _TurnState:
    turn: int
    tier: str
    intervals: list[tuple[float, float]] = field(default_factory=list)
    announced: bool = False


@dataclass(slots=True)
class _Running:
    call_id: str
    definition: ToolDefinition
    started: float
    task: asyncio.Task[Any] | None = None
    message: str = ""
    timer: Timer | None = None


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
        #: The one loop timer behind every call's "still running" check.
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
        if state is None:
            state = self._turns[call_id] = _TurnState(session.turn, session.tier)
        if task is None:
            task = asyncio.current_task()
        running = _Running(call_id, d, self.timer(), task, message)
        if expected_p50_ms is not None and expected_p50_ms > threshold_ms:
            self._announce(state, call_id, d, message, "slow_tool")
        elif not state.announced:
            running.timer = self.wheel.call_later(
                threshold_ms / 1000, self._due, running, task.get_loop() if task is not None else None
            )
        self._running[task] = running

    def finished(self, task: asyncio.Task[Any] | None = None) -> None:
        """The tool call run by ``task`` (None: the current task) has completed."""
        running = self._running.pop(task if task is not None else asyncio.current_task(), None)
        if running is None:
            return
        if running.timer is not None:
            self.wheel.cancel(running.timer)
        state = self._turns.get(running.call_id)
        if state is not None:
            state.intervals.append((running.started, self.timer()))

    def _due(self, running: _Running) -> None:
        self._still_running(running.task, running.call_id, running.definition, running.message)

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
        self._turns.clear()
