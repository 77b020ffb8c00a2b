"""Cancellation bookkeeping for a request that runs in its caller's task (``Connection._race``).

Why apart: racing a request against its server's death in the caller's own task (no task per call) needs two
small tools that have nothing to do with MCP: awaiting a coroutine while hearing every cancellation that reaches
it, and taking back the cancellation requests one made of a task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Generator
from typing import Any


def uncancel(task: asyncio.Task[Any], times: int) -> int:
    """Take back ``times`` cancellation requests of ours; returns the requests still pending (someone else's)."""
    for _ in range(times):
        task.uncancel()
    return task.cancelling()


class Watched:
    """Awaits a coroutine like ``await coro`` does, and calls ``on_cancel`` each time a cancellation reaches it.

    A plain ``await`` hands a cancellation straight to the innermost frame, so nothing in between hears of it;
    this steps the coroutine itself (send/throw, as ``yield from`` would) to notice.
    """

    __slots__ = ("_coro", "_on_cancel")

    def __init__(self, coro: Coroutine[Any, Any, Any], on_cancel: Callable[[], None]) -> None:
        self._coro = coro
        self._on_cancel = on_cancel

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self._coro
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                step = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as done:
                return done.value
            try:
                value, error = (yield step), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as e:  # handed on to the coroutine, exactly as ``yield from`` would
                value, error = None, e
                if isinstance(e, asyncio.CancelledError):
                    self._on_cancel()
