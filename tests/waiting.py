"""Waiting on conditions in tests, never on the clock (issue 35 item 7).

A fixed ``sleep`` before an assertion passes on an idle machine and fails, or passes without testing anything, on a
loaded one. Tests wait here instead: until a condition holds (with a deadline that only bounds a failure), until the
loop has run what is already scheduled, or forever (a stand-in request that only ends by being cancelled).
tests/gates/test_fixed_sleeps.py counts the fixed sleeps that remain."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import NoReturn

POLL_S = 0.01


async def wait_until(
    predicate: Callable[[], object | Awaitable[object]], within: float = 10.0, what: str = "the condition"
) -> None:
    """Return as soon as ``predicate()`` (sync or async) is truthy; AssertionError naming ``what`` after ``within`` s.

    The deadline only bounds a failure: a passing test returns at the first check that holds, however loaded the
    machine is, so make it generous."""
    deadline = time.monotonic() + within
    while True:
        got = predicate()
        if inspect.isawaitable(got):
            got = await got
        if got:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within} s waiting for {what}")
        await asyncio.sleep(POLL_S)


def wait_until_sync(predicate: Callable[[], object], within: float = 10.0, what: str = "the condition") -> None:
    """``wait_until`` for code outside an event loop (threads, subprocesses)."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within} s waiting for {what}")
        time.sleep(POLL_S)


async def pending_callbacks_ran() -> None:
    """Return once every callback already scheduled on the running loop has run.

    The loop runs its ready callbacks in the order they were scheduled, so a callback scheduled now runs after them:
    the positive signal a "nothing happened" check waits for, instead of a sleep."""
    ran = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(ran.set_result, None)
    await ran


async def forever() -> NoReturn:
    """Never return: a stand-in for a request or a peer that only ends by being cancelled."""
    await asyncio.get_running_loop().create_future()
    raise AssertionError("unreachable: nothing completes this future")
