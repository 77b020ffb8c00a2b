"""EventBus: bounded queues that drop the oldest and count drops; events serialize to JSON lines."""

from __future__ import annotations

import asyncio
import json

from engine.events import CallEnded, EventBus, ToolCompleted, TranscriptAdded


def test_drop_oldest_and_count() -> None:
    bus = EventBus(queue_size=3)
    sub = bus.subscribe()
    for i in range(5):
        bus.publish(TranscriptAdded(call_id="c", role="user", text=str(i)))
    assert sub.dropped == 2 and bus.dropped_total == 2
    assert [e.text for e in sub.drain() if isinstance(e, TranscriptAdded)] == ["2", "3", "4"]


def test_slow_subscriber_does_not_affect_fast_one() -> None:
    bus = EventBus(queue_size=2)
    slow, fast = bus.subscribe(), bus.subscribe(maxsize=100)
    for i in range(10):
        bus.publish(TranscriptAdded(call_id="c", role="user", text=str(i)))
    assert len(fast.drain()) == 10 and fast.dropped == 0
    assert slow.dropped == 8


def test_type_filter() -> None:
    bus = EventBus()
    sub = bus.subscribe(types={"call.ended"})
    bus.publish(TranscriptAdded(call_id="c", role="user", text="x"))
    bus.publish(CallEnded(call_id="c", reason="r"))
    assert [e.type for e in sub.drain()] == ["call.ended"]


async def test_async_iteration_and_close() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    got: list[str] = []

    async def reader() -> None:
        async for ev in sub:
            got.append(ev.type)

    task = asyncio.create_task(reader())
    bus.publish(CallEnded(call_id="c", reason="r"))
    await asyncio.sleep(0)
    sub.close()
    await asyncio.wait_for(task, 1)
    assert got == ["call.ended"] and bus.subscriber_count == 0


async def test_a_waiting_reader_wakes_for_each_event_and_a_cancelled_one_leaves_the_others_waiting() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    first, second = asyncio.create_task(sub.get()), asyncio.create_task(sub.get())
    await asyncio.sleep(0)  # both wait on the empty queue
    first.cancel()
    await asyncio.sleep(0)
    assert first.cancelled() and not second.done()
    bus.publish(CallEnded(call_id="c", reason="one"))
    assert (await asyncio.wait_for(second, 1)).type == "call.ended"
    for reason in ("two", "three"):  # events published while nobody waits are there for the next get
        bus.publish(CallEnded(call_id="c", reason=reason))
    got = [await asyncio.wait_for(sub.get(), 1) for _ in range(2)]
    assert [e.reason for e in got if isinstance(e, CallEnded)] == ["two", "three"]
    late = asyncio.create_task(sub.get())
    await asyncio.sleep(0)  # it runs up to its wait on the empty queue
    bus.publish(CallEnded(call_id="c", reason="four"))
    assert isinstance(ev := await asyncio.wait_for(late, 1), CallEnded) and ev.reason == "four"


def test_json_line_has_dotted_type() -> None:
    ev = ToolCompleted(
        call_id="c",
        tool_call_id="tc_1",
        exposed_name="x",
        server="s",
        tool="t",
        status="success",
        latency_ms=1.5,
        message="ok",
        data={"a": (1, 2)},
    )
    d = json.loads(ev.to_json())
    assert d["type"] == "tool.completed" and d["latency_ms"] == 1.5 and d["data"] == {"a": [1, 2]}
    assert "\n" not in ev.to_json()


def test_wants_follows_the_subscribers_and_their_type_filters() -> None:
    bus = EventBus()
    assert not bus.wants("tool.completed")  # nobody listens: hot paths build nothing
    narrow = bus.subscribe(types={"call.ended"})
    assert bus.wants("call.ended") and not bus.wants("tool.completed")
    everything = bus.subscribe()
    assert bus.wants("tool.completed")
    everything.close()
    assert not bus.wants("tool.completed") and bus.wants("call.ended")
    narrow.close()
    assert not bus.wants("call.ended")


async def test_the_execution_path_builds_no_tool_events_nobody_wants() -> None:
    from engine.app import Engine
    from engine.config.models import Settings
    from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult

    async def echo(args: dict[str, object], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.success("ok")

    engine = Engine(Settings(), extra_tools=[FunctionTool(ToolDefinition("echo", "Echo."), echo)])
    before = engine.bus.published_total
    r = await engine.executor.execute(None, "echo", {}, allowed=frozenset({"echo"}))
    assert r.status == "success" and engine.bus.published_total == before
    calls = engine.bus.subscribe(types={"call.ended"})
    await engine.executor.execute(None, "echo", {}, allowed=frozenset({"echo"}))
    assert engine.bus.published_total == before
    sub = engine.bus.subscribe(types={"tool.completed"})
    await engine.executor.execute(None, "echo", {}, allowed=frozenset({"echo"}))
    assert [type(e).__name__ for e in sub.drain()] == ["ToolCompleted"] and not calls.drain()


async def test_the_execution_path_leaves_no_reference_cycles() -> None:
    """A call's deadline and turn accounting are freed when it ends, not by the garbage collector (each cycle
    left per call made collections run several times as often on a busy engine)."""
    import gc

    from engine.app import Engine
    from engine.config.models import Settings
    from engine.sessions.session import CallSession
    from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult

    async def echo(args: dict[str, object], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.success("ok")

    engine = Engine(Settings(), extra_tools=[FunctionTool(ToolDefinition("echo", "Echo."), echo)])
    sub = engine.bus.subscribe()
    session = CallSession(call_id="c", context="c", provider="p")
    session.shown_tools = frozenset({"echo"})
    for _ in range(5):  # first calls build what is kept (plans, statuses, windows)
        await engine.execute_tool(session, "echo", {})
    sub.drain()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for i in range(50):
            r = await engine.execute_tool(session, "echo", {}, tool_call_id=str(i))
            assert r.status == "success"
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.garbage.clear()
        gc.set_debug(0)
        gc.enable()
    assert left == []
    assert len(sub.drain()) == 100  # requested + completed per call: events were built and published
