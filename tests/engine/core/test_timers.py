"""The tool path's shared timers: ``TimerWheel`` fires in order on one loop handle, and ``Deadlines`` behaves
like ``asyncio.timeout`` (a timeout only when our deadline cancelled the task and nobody else did)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from engine.tools.timers import Deadlines, Timer, TimerWheel
from tests.waiting import forever, wait_until


async def test_timers_fire_in_deadline_order_and_cancelled_ones_never_fire() -> None:
    wheel = TimerWheel()
    fired: list[str] = []
    loop = asyncio.get_running_loop()
    start = loop.time()
    wheel.call_later(0.06, fired.append, "c")
    b = wheel.call_later(0.04, fired.append, "b")
    wheel.call_later(0.02, fired.append, "a")
    late = wheel.call_later(0.03, fired.append, "never")
    wheel.cancel(late)
    assert len(wheel) == 3
    await wait_until(lambda: "b" in fired, what="timer b")
    assert fired[:2] == ["a", "b"]
    wheel.cancel(b)  # already fired: nothing happens
    await wait_until(lambda: len(fired) == 3, what="timer c")
    assert fired == ["a", "b", "c"] and len(wheel) == 0
    assert loop.time() - start >= 0.06


async def test_a_timer_never_fires_before_its_deadline() -> None:
    wheel = TimerWheel()
    loop = asyncio.get_running_loop()
    seen: list[float] = []
    for delay in (0.01, 0.02, 0.015):
        wheel.call_later(delay, seen.append, loop.time() + delay)
    await wait_until(lambda: len(seen) == 3, what="three timers")
    assert sorted(seen) == seen  # the payload is each deadline: they fired in deadline order


async def test_cancelled_timers_do_not_pile_up_behind_a_long_one() -> None:
    wheel = TimerWheel()
    wheel.call_later(60, lambda _: None, None)  # a call that runs for a minute
    for _ in range(10_000):
        wheel.cancel(wheel.call_later(30, lambda _: None, None))
    assert len(wheel) == 1
    assert sum(len(lane) for lane in wheel._lanes.values()) == 1  # a cancelled timer leaves nothing behind
    wheel.clear()


async def test_lanes_of_different_delays_fire_in_deadline_order_and_empty_lanes_go() -> None:
    wheel = TimerWheel()
    fired: list[str] = []
    for name, delay in (("b2", 0.03), ("a1", 0.01), ("b1", 0.02), ("a2", 0.03), ("late", 0.04)):
        wheel.call_later(delay, fired.append, name)
    gone = wheel.call_later(0.015, fired.append, "cancelled")
    wheel.cancel(gone)
    await wait_until(lambda: "late" in fired, what="the latest timer")
    assert fired == ["a1", "b1", "b2", "a2", "late"]  # b2 and a2 share a lane: in the order they were set
    assert len(wheel) == 0 and not wheel._lanes


async def test_a_callback_that_sets_a_later_timer_does_not_delay_an_earlier_one() -> None:
    wheel = TimerWheel()
    fired: list[str] = []

    def first(_: object) -> None:
        fired.append("first")
        wheel.call_later(0.5, fired.append, "much later")

    wheel.call_later(0.01, first, None)
    wheel.call_later(0.03, fired.append, "second")  # another lane, due long before the callback's timer
    await wait_until(lambda: "second" in fired, what="the second timer")
    assert fired == ["first", "second"]
    wheel.clear()


async def test_a_failing_callback_does_not_stop_the_timers_behind_it() -> None:
    wheel = TimerWheel()
    loop = asyncio.get_running_loop()
    errors: list[object] = []
    loop.set_exception_handler(lambda _loop, ctx: errors.append(ctx.get("exception")))
    fired: list[int] = []

    def boom(_: object) -> None:
        raise ValueError("bad callback")

    wheel.call_later(0.01, boom, None)
    wheel.call_later(0.01, fired.append, 1)
    wheel.call_later(0.02, fired.append, 2)
    await wait_until(lambda: 2 in fired, what="the timer due last")
    assert fired == [1, 2] and isinstance(errors[0], ValueError)


async def _guarded(deadlines: Deadlines, delay: float, work: float) -> str:
    d = deadlines.start(delay)
    try:
        await asyncio.sleep(work)
    except asyncio.CancelledError:
        if not deadlines.end(d):
            raise
        return "timeout"
    deadlines.end(d)
    return "done"


async def test_deadline_times_out_a_slow_call_and_leaves_a_quick_one() -> None:
    deadlines = Deadlines()
    loop = asyncio.get_running_loop()
    t = loop.time()
    assert await _guarded(deadlines, 0.03, 5) == "timeout"  # the 5 s of work were cut short, not waited out
    assert loop.time() - t >= 0.03  # and not before the deadline
    assert await _guarded(deadlines, 1, 0) == "done"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # our cancellation was taken back


async def test_an_outside_cancellation_is_never_mistaken_for_a_timeout() -> None:
    deadlines = Deadlines()
    task = asyncio.create_task(_guarded(deadlines, 5, 5))
    await asyncio.sleep(0)  # the task runs up to its work, its deadline started
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    both = asyncio.create_task(_guarded(deadlines, 0.01, 5))  # cancelled from outside after our deadline fired
    await asyncio.sleep(0)

    def cancel_too() -> None:
        both.cancel()

    asyncio.get_running_loop().call_later(0.01, cancel_too)
    with pytest.raises(asyncio.CancelledError):
        await both


async def test_deadlines_inside_asyncio_timeout_agree_with_it() -> None:
    deadlines = Deadlines()
    with pytest.raises(TimeoutError):  # the outer asyncio.timeout fires first: its cancellation, not ours
        async with asyncio.timeout(0.01):
            await _guarded(deadlines, 5, 5)
    async with asyncio.timeout(5):  # ours fires first: a timeout result, the outer scope untouched
        assert await _guarded(deadlines, 0.01, 5) == "timeout"


async def test_a_held_deadline_stops_its_clock_and_runs_on_with_the_time_it_had_left() -> None:
    """While a tool's question waits for a person (engine.elicitation) the call's timeout does not run."""
    deadlines = Deadlines()
    loop = asyncio.get_running_loop()

    async def call() -> str:
        d = deadlines.start(0.1)
        try:
            await asyncio.sleep(0.05)
            with deadlines.held(d):
                await asyncio.sleep(0.2)  # twice the whole limit: held, so no timeout
            await forever()  # the 0.05 s it had left run out here
        except asyncio.CancelledError:
            return "timeout" if deadlines.end(d) else "cancelled"
        deadlines.end(d)
        return "done"

    start = loop.time()
    assert await call() == "timeout"
    assert loop.time() - start >= 0.29  # not 0.1: the clock stood still while held


def _cyclic_garbage_after(action: Callable[[], object]) -> list[object]:
    """What ``action()`` left that only the garbage collector could free (objects in reference cycles)."""
    import gc

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        action()
        gc.collect()
        return list(gc.garbage)
    finally:
        gc.garbage.clear()
        gc.set_debug(0)
        gc.enable()


class _Owner:
    """Keeps its timer, as a deadline or a running call does (the timer's argument is the owner itself)."""

    timer: Timer | None = None


async def test_cancelled_and_fired_timers_leave_no_reference_cycles_behind() -> None:
    wheel = TimerWheel()
    deadlines = Deadlines()
    task = asyncio.current_task()
    assert task is not None

    def cancel_many() -> None:
        for _ in range(100):
            owner = _Owner()
            owner.timer = timer = wheel.call_later(30, lambda _: None, owner)
            wheel.cancel(timer)
            deadlines.end(deadlines.start(30, task))  # a call that finished in time

    assert _cyclic_garbage_after(cancel_many) == []
    fired: list[str] = []
    owner = _Owner()
    owner.timer = wheel.call_later(0.001, lambda o: fired.append(type(o).__name__), owner)
    await wait_until(lambda: fired, what="the owner's timer")
    assert fired == ["_Owner"]
    assert _cyclic_garbage_after(lambda: None) == []  # the fired timer let go of its owner too
    wheel.clear()
