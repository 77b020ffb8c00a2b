"""What tracing keeps on the tool path (issue 36 item 5): the bus's tap hands each event to its subscriber as it is
published; tracing keeps a tuple of a few fields of a tool call or a turn, never the event itself, so nothing it
holds until the next batch outlives the young GC generations; the spans come out the same (a real OTLP/HTTP
receiver decodes them)."""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Coroutine
from typing import Any

from engine.config.models import Settings
from engine.events import CallEnded, CallStarted, Event, ToolCompleted, ToolRequested, TurnTimings
from engine.events.bus import EventBus
from engine.telemetry import Telemetry
from tests.engine.telemetry.otlp_receiver import otlp_receiver
from tests.engine.telemetry.test_traces import _no_otel_env  # noqa: F401  (autouse: the runner's OTEL_* are not ours)


def _no_task(coro: Coroutine[Any, Any, Any], *, name: str) -> Any:
    coro.close()
    raise AssertionError(f"tracing started a task ({name})")


def _tool(call_id: str, i: int) -> ToolCompleted:
    return ToolCompleted(
        ts=time.time(),
        call_id=call_id,
        tool_call_id=f"t{i}",
        exposed_name="echo",
        server="builtin",
        tool="echo",
        status="success",
        latency_ms=1.0,
        message="hello",
    )


def test_a_tap_takes_each_event_of_its_types_as_it_is_published_and_stops_when_closed() -> None:
    bus = EventBus()
    queued = bus.subscribe()
    seen: list[Event] = []
    tap = bus.tap(seen.append, {ToolCompleted.type})
    ev = _tool("c", 1)
    bus.publish(ev)
    bus.publish(ToolRequested(call_id="c", tool_call_id="t1", exposed_name="echo", server="builtin", tool="echo"))
    assert seen == [ev]  # at once, and only its types
    assert len(queued.drain()) == 2  # the other subscribers as before
    assert bus.wants(ToolCompleted.type) and tap.dropped == 0
    tap.close()
    bus.publish(_tool("c", 2))
    assert seen == [ev] and bus.subscriber_count == 1


async def test_tracing_keeps_no_event_and_nothing_the_gc_must_track_until_the_batch() -> None:
    async with otlp_receiver() as rx:
        bus = EventBus()
        settings = Settings.model_validate({"engine": {"telemetry": {"endpoint": rx.url}}})
        tel = Telemetry(lambda: settings, bus, _no_task)
        await tel.start()
        try:
            bus.publish(CallStarted(call_id="c", context="ctx", provider="p"))
            tool, turn = _tool("c", 1), TurnTimings(call_id="c", turn=1, tier="fast", budget_ms=800, latency_ms=2.0)
            refs = sys.getrefcount(tool), sys.getrefcount(turn)
            bus.publish(tool)
            bus.publish(turn)
            assert (sys.getrefcount(tool), sys.getrefcount(turn)) == refs  # nothing holds the events themselves
            held = [o for o in gc.get_referrers(tool.tool_call_id) if isinstance(o, tuple)]
            assert held, "the tool call's fields are kept for its span"
            gc.collect(0)
            assert not any(gc.is_tracked(o) for o in held)  # a tuple of atoms: the young collection let it go
            bus.publish(CallEnded(call_id="c", reason="done"))
            assert await tel.flush()
            spans = {s.name: s for s in rx.spans}
            assert spans["execute_tool echo"].parent_id == spans["turn"].span_id
            assert spans["execute_tool echo"].attributes["gen_ai.tool.call.id"] == "t1"
            assert "hello" not in repr(rx.bodies)
        finally:
            await tel.stop()
