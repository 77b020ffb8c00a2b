"""One loop timer for many short-lived deadlines: the tool path's timeouts and slow-tool checks.

Why it exists: every tool call has a timeout and, inside a call, a slow-response check; a ``call_later`` (or an
``asyncio.timeout``) per call costs a ``TimerHandle`` pushed onto the loop's heap and cancelled moments later,
which at thousands of calls a second is a sizeable share of a call's cost. A ``TimerWheel`` keeps the deadlines
in its own heap and holds a single loop handle for the earliest one. A deadline that is cancelled (its call
ended in time) is only marked; cancelled ones at the front of the heap are dropped as calls end, and the heap is
rebuilt when cancelled entries pile up behind a long-running one, so it holds about the calls in flight.

Timers fire exactly when a ``call_at`` for the same moment would (the loop's own rule: once the loop time is
within the clock's resolution of the deadline). The wheel's handle is left armed when nothing waits: it fires
once, finds nothing and stops, which is cheaper than re-arming the loop for every call.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Any

#: How early the loop may run a timer (asyncio runs a handle once its time is within the clock's resolution).
_RESOLUTION = time.get_clock_info("monotonic").resolution
#: Rebuild the heap once it holds this many entries and more than half of them are cancelled.
_MIN_REBUILD = 64


class Timer:
    """One scheduled call; ``cancel`` it when what it guards ended."""

    __slots__ = ("arg", "cancelled", "fn", "when")

    def __init__(self, when: float, fn: Callable[[Any], None], arg: Any) -> None:
        self.when = when
        self.fn = fn
        self.arg = arg
        self.cancelled = False


class TimerWheel:
    """Timers on the running loop, sharing one loop handle (see the module docstring)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self._cancelled = 0
        self._handle: asyncio.TimerHandle | None = None
        self._handle_at = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None

    def call_later(self, delay_s: float, fn: Callable[[Any], None], arg: Any) -> Timer:
        """Run ``fn(arg)`` on the running loop ``delay_s`` seconds from now, unless cancelled first."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (tests run one per test): the old one's timers went with it
            self.clear()
            self._loop = loop
        timer = Timer(loop.time() + delay_s, fn, arg)
        heapq.heappush(self._heap, (timer.when, next(self._order), timer))
        if self._handle is None or timer.when < self._handle_at:
            self._arm(loop, timer.when)
        return timer

    def cancel(self, timer: Timer) -> None:
        if timer.cancelled:
            return
        timer.cancelled = True
        self._cancelled += 1
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
            self._cancelled -= 1
        if self._cancelled > _MIN_REBUILD and self._cancelled * 2 > len(heap):
            self._heap = [item for item in heap if not item[2].cancelled]
            heapq.heapify(self._heap)
            self._cancelled = 0

    def clear(self) -> None:
        """Drop every timer and the loop handle (the owner stops, or the loop changed)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        for _, _, timer in self._heap:
            timer.cancelled = True
        self._heap.clear()
        self._cancelled = 0

    def __len__(self) -> int:
        """Timers still waiting."""
        return len(self._heap) - self._cancelled

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = loop.call_at(when, self._tick)
        self._handle_at = when

    def _tick(self) -> None:
        self._handle = None
        loop = self._loop
        if loop is None:
            return
        heap = self._heap
        now = loop.time() + _RESOLUTION
        while heap and heap[0][0] <= now:
            timer = heapq.heappop(heap)[2]
            if timer.cancelled:
                self._cancelled -= 1
                continue
            timer.cancelled = True  # fired: a later cancel() is a no-op
            try:
                timer.fn(timer.arg)
            except Exception as e:  # one bad callback must not stop the timers behind it
                loop.call_exception_handler({"message": "TimerWheel callback failed", "exception": e})
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
            self._cancelled -= 1
        if heap and self._handle is None:
            self._arm(loop, heap[0][0])


class Deadline:
    """One call's timeout: the task it cancels and how many cancellations that task had pending before."""

    __slots__ = ("cancelling", "expired", "task", "timer")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.cancelling = task.cancelling()
        self.expired = False
        self.timer: Timer | None = None


class Deadlines:
    """``asyncio.timeout`` semantics on a ``TimerWheel``: ``start`` before awaiting, ``end`` on every way out.

    At the deadline the task is cancelled; ``end`` takes that cancellation back and says whether the
    ``CancelledError`` the awaited code raised was ours (so it is a timeout), exactly as ``asyncio.timeout``
    decides to raise ``TimeoutError``: our deadline fired and no other cancellation is pending.
    """

    def __init__(self) -> None:
        self.wheel = TimerWheel()

    def start(self, delay_s: float) -> Deadline:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a deadline needs a running task")
        deadline = Deadline(task)
        deadline.timer = self.wheel.call_later(delay_s, _expire, deadline)
        return deadline

    def end(self, deadline: Deadline) -> bool:
        """Stop ``deadline``; True when it fired and no other cancellation of its task is pending."""
        if not deadline.expired:
            if deadline.timer is not None:
                self.wheel.cancel(deadline.timer)
            return False
        return deadline.task.uncancel() <= deadline.cancelling


def _expire(deadline: Deadline) -> None:
    deadline.expired = True
    deadline.task.cancel()
