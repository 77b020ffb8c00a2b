"""Issue 16 A6: an invocation cancelled mid-run (apply-now, barge-in, call end, a provider's cancel) still ends:
the engine publishes its ``tool.completed`` with status ``cancelled`` and the console shows it, never "running"."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest

from console.state import ConsoleState
from engine.config.models import Settings
from engine.events import Event, ToolCompleted
from engine.sessions.session import CallSession
from tests.engine.core.helpers import echo_tool, engine_with


def make_session() -> CallSession:
    s = CallSession(call_id="call-c", context="c", provider="s")
    s.shown_tools = frozenset({"echo"})
    return s


async def _run_and_cancel(many: bool) -> list[Event]:
    engine = engine_with(Settings(), echo_tool(delay=30))
    sub = engine.bus.subscribe()
    session = make_session()
    coro: Awaitable[Any]
    if many:  # a model turn's parallel calls, cancelled together (barge-in cancels the turn's task)
        coro = engine.executor.execute_many(session, [("echo", {"text": "a"}, "tc_a"), ("echo", {"text": "b"}, "tc_b")])
    else:
        coro = engine.executor.execute(session, "echo", {"text": "a"}, tool_call_id="tc_a")
    task = asyncio.ensure_future(coro)
    seen: list[Event] = []
    while sum(e.type == "tool.requested" for e in seen) < (2 if many else 1):
        seen.append(await sub.get())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return [*seen, *sub.drain()]


@pytest.mark.parametrize("many", [False, True])
async def test_cancelled_invocation_publishes_a_terminal_event(many: bool) -> None:
    events = await _run_and_cancel(many)
    done = [e for e in events if isinstance(e, ToolCompleted)]
    assert sorted(e.tool_call_id for e in done) == (["tc_a", "tc_b"] if many else ["tc_a"])
    assert all(e.status == "cancelled" and "cancelled" in e.message for e in done)
    state = ConsoleState()
    state.apply(events)
    assert [inv.status for inv in state.invocations] == ["cancelled"] * len(done)
