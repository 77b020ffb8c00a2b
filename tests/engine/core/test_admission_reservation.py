"""``Admission.reserve``: a new call's place is held from the decision until its session takes it over, and freed
on every way out of the set-up (done, error, cancellation, refusal by a drain)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from engine.calls.capacity import Admission, CallRefused, continuing


class Engine:
    """The two getters an Admission reads: the limit and the live sessions (``live`` grows as a session starts)."""

    def __init__(self, max_calls: int | None) -> None:
        self.max_calls = max_calls
        self.live = 0
        self.admission = Admission(lambda: self.max_calls, lambda: self.live)

    def start_session(self) -> None:
        """What CallManager does for a new call: check, then the session exists."""
        self.admission.check()
        self.live += 1


def test_a_reserved_place_counts_until_the_session_takes_it_over() -> None:
    e = Engine(max_calls=1)
    with e.admission.reserve():
        assert e.admission.status().live_calls == 1 and e.admission.connecting == 1
        with pytest.raises(CallRefused, match=r"0 live call\(s\) and 1 being connected, engine.max_calls is 1"):
            with e.admission.reserve():
                pass
        with pytest.raises(CallRefused, match=r"engine\.max_calls is 1"):  # a text call meanwhile, from another task
            contextvars.Context().run(e.admission.check)
        e.start_session()  # the reserved call's own session may start: the place is its own
        assert e.admission.status().live_calls == 1 and e.admission.connecting == 0
    assert e.admission.status().live_calls == 1  # the live session keeps the place; nothing is counted twice
    assert e.admission.refused == {"draining": 0, "max_calls": 2}


def test_a_continuing_call_takes_no_second_place() -> None:
    e = Engine(max_calls=2)
    with e.admission.reserve():
        e.start_session()
        e.live -= 1  # the AI part ended (a transfer); the phone call goes on
        with continuing():
            e.start_session()  # the AI comes back
        assert e.admission.status().live_calls == 1
        with e.admission.reserve():  # a second caller still fits
            assert e.admission.status().live_calls == 2


def test_the_place_is_freed_when_the_set_up_fails() -> None:
    e = Engine(max_calls=1)
    with pytest.raises(RuntimeError, match="media failed"):
        with e.admission.reserve():
            raise RuntimeError("media failed")
    assert e.admission.status().live_calls == 0
    with e.admission.reserve():  # the next caller gets the place
        pass


async def test_the_place_is_freed_when_the_set_up_is_cancelled() -> None:
    e = Engine(max_calls=1)
    reserved = asyncio.Event()

    async def connecting() -> None:
        with e.admission.reserve():
            reserved.set()
            await asyncio.Event().wait()  # the caller's media never comes up

    task = asyncio.create_task(connecting())
    await reserved.wait()
    assert e.admission.connecting == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert e.admission.connecting == 0 and e.admission.status().live_calls == 0


async def test_the_session_started_in_a_task_of_the_set_up_takes_the_place_over() -> None:
    e = Engine(max_calls=1)
    with e.admission.reserve():  # a realtime call connects its provider in a task of its own
        await asyncio.create_task(_start(e))
        assert e.live == 1 and e.admission.connecting == 0


async def _start(e: Engine) -> None:
    e.start_session()


def test_a_drain_refuses_a_reserved_call_whose_session_has_not_started() -> None:
    e = Engine(max_calls=None)
    with e.admission.reserve():
        e.admission.drain()
        with pytest.raises(CallRefused, match=r"started draining .* while the call was being connected"):
            e.start_session()
    assert e.live == 0 and e.admission.status().live_calls == 0
    assert e.admission.refused == {"draining": 1, "max_calls": 0}
    with pytest.raises(CallRefused, match="draining"):
        with e.admission.reserve():
            pass
    e.admission.resume()
    with e.admission.reserve():
        e.start_session()
    assert e.live == 1
