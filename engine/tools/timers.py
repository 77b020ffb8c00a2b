"""One loop timer for many short-lived deadlines: the tool path's timeouts and slow-tool checks.

Why it exists: every tool call has a timeout and, inside a call, a slow-response check; a ``call_later`` (or an
``asyncio.timeout``) per call costs a ``TimerHandle`` pushed onto the loop's heap and cancelled moments later,
which at thousands of calls a second is a sizeable share of a call's cost. A ``TimerWheel`` holds a single loop
handle for its earliest deadline and keeps its timers in lanes, one per delay: timers of one delay are due in the
order they were set (the loop's clock only moves forward), so a lane is an insertion-ordered dict whose first entry
is its earliest, and setting or cancelling a timer is one dict store or delete — no heap, and a cancelled timer
leaves nothing behind. Calls use a handful of delays (the tool timeouts and slow-response thresholds in config).

Timers fire exactly when a ``call_at`` for the same moment would (the loop's own rule: once the loop time is
within the clock's resolution of the deadline), in deadline order, ties in the order they were set. The wheel's
handle is left armed when nothing waits: it fires once, finds nothing and stops, which is cheaper than
re-arming the loop for every call.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from engine.core.running_task import current_task

#: How early the loop may run a timer (asyncio runs a handle once its time is within the clock's resolution).
RESOLUTION = time.get_clock_info("monotonic").resolution


class Timer:
    """One scheduled call; ``cancel`` it when what it guards ended."""

    __slots__ = ("arg", "cancelled", "fn", "lane", "order", "when")

    def __init__(self, when: float, fn: Callable[[Any], None], arg: Any, lane: dict[Timer, None], order: int) -> None:
        self.when = when
        self.fn: Callable[[Any], None] | None = fn
        self.arg = arg
        self.lane = lane
        self.order = order
        self.cancelled = False


class TimerWheel:
    """Timers on the running loop, sharing one loop handle (see the module docstring)."""

    def __init__(self) -> None:
        self._lanes: dict[float, dict[Timer, None]] = {}
        self._order = itertools.count()
        self._count = 0
        self._handle: asyncio.TimerHandle | None = None
        self._handle_at = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None

    def call_later(
        self, delay_s: float, fn: Callable[[Any], None], arg: Any, loop: asyncio.AbstractEventLoop | None = None
    ) -> Timer:
        """Run ``fn(arg)`` on the running loop ``delay_s`` seconds from now, unless cancelled first. ``loop`` is
        that loop when the caller has it at hand (``asyncio.get_running_loop`` is a system call on Python 3.11)."""
        if loop is None:
            loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (tests run one per test): the old one's timers went with it
            self.clear()
            self._loop = loop
        lane = self._lanes.get(delay_s)
        if lane is None:
            lane = self._lanes[delay_s] = {}
        timer = Timer(loop.time() + delay_s, fn, arg, lane, next(self._order))
        lane[timer] = None
        self._count += 1
        if self._handle is None or timer.when < self._handle_at:
            self._arm(loop, timer.when)
        return timer

    def add(self, timer: Timer, delay_s: float, loop: asyncio.AbstractEventLoop) -> None:
        """Schedule ``timer`` (a ``Timer`` subclass whose ``fn`` and ``arg`` are set: one object per call instead
        of two) ``delay_s`` seconds from now on ``loop``, the running loop."""
        if loop is not self._loop:
            self.clear()
            self._loop = loop
        lane = self._lanes.get(delay_s)
        if lane is None:
            lane = self._lanes[delay_s] = {}
        timer.when = when = loop.time() + delay_s
        timer.lane = lane
        timer.order = next(self._order)
        lane[timer] = None
        self._count += 1
        if self._handle is None or when < self._handle_at:
            self._arm(loop, when)

    def cancel(self, timer: Timer) -> None:
        """Stop ``timer`` (a no-op once it fired or was cancelled). It lets go of its callback and argument: a
        timer's owner usually keeps the timer (a deadline, a running call), so holding on to the owner would make
        a reference cycle that only the garbage collector frees — two or three per tool call."""
        if timer.cancelled:
            return
        timer.cancelled = True
        timer.fn = timer.arg = None
        del timer.lane[timer]
        self._count -= 1

    def clear(self) -> None:
        """Drop every timer and the loop handle (the owner stops, or the loop changed)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        for lane in self._lanes.values():
            for timer in lane:
                timer.cancelled = True
                timer.fn = timer.arg = None
        self._lanes = {}
        self._count = 0

    def __len__(self) -> int:
        """Timers still waiting."""
        return self._count

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
        now = loop.time() + RESOLUTION
        due: list[Timer] = []
        for lane in self._lanes.values():
            for timer in lane:  # in deadline order: stop at the first one not yet due
                if timer.when > now:
                    break
                due.append(timer)
        due.sort(key=_due_order)
        for timer in due:
            if timer.cancelled:  # an earlier callback cancelled it
                continue
            fn, arg = timer.fn, timer.arg
            self.cancel(timer)  # fired: out of its lane, and a later cancel() is a no-op
            if fn is None:  # pragma: no cover - only a cancelled timer lets go of its callback
                continue
            try:
                fn(arg)
            except Exception as e:  # one bad callback must not stop the timers behind it
                loop.call_exception_handler({"message": "TimerWheel callback failed", "exception": e})
        for delay in [d for d, lane in self._lanes.items() if not lane]:
            del self._lanes[delay]
        heads = [next(iter(lane)).when for lane in self._lanes.values()]
        if heads:
            first = min(heads)
            if self._handle is None or first < self._handle_at:  # a callback may have armed a later one
                self._arm(loop, first)


def _due_order(timer: Timer) -> tuple[float, int]:
    return (timer.when, timer.order)


class Deadline(Timer):
    """One call's timeout, its own timer on the wheel (one object per call): the task it cancels and how many
    cancellations that task had pending before. ``resumed`` is the timer that runs the rest of its time after a
    hold. Calling it gives that hold (``Deadlines.held``): what a running tool is handed to stop its clock while
    it waits for a person, without a ``functools.partial`` built for every call."""

    __slots__ = ("cancelling", "deadlines", "expired", "resumed", "task")

    def __init__(self, task: asyncio.Task[Any], deadlines: Deadlines) -> None:
        self.fn = _expire
        self.arg = self  # let go of by the wheel's cancel, when the deadline ends or fires
        self.cancelled = False
        self.task = task
        self.cancelling = task.cancelling()
        self.expired = False
        self.resumed: Timer | None = None
        self.deadlines = deadlines

    def __call__(self) -> AbstractContextManager[None]:
        return self.deadlines.held(self)


class Deadlines:
    """``asyncio.timeout`` semantics on a ``TimerWheel``: ``start`` before awaiting, ``end`` on every way out.

    At the deadline the task is cancelled; ``end`` takes that cancellation back and says whether the
    ``CancelledError`` the awaited code raised was ours (so it is a timeout), exactly as ``asyncio.timeout``
    decides to raise ``TimeoutError``: our deadline fired and no other cancellation is pending.
    """

    def __init__(self) -> None:
        self.wheel = TimerWheel()

    def start(self, delay_s: float, task: asyncio.Task[Any] | None = None) -> Deadline:
        """Cancel ``task`` (None: the current task) ``delay_s`` seconds from now unless ended first."""
        if task is None:
            task = current_task()
        if task is None:
            raise RuntimeError("a deadline needs a running task")
        deadline = Deadline(task, self)
        self.wheel.add(deadline, delay_s, task.get_loop())
        return deadline

    def end(self, deadline: Deadline) -> bool:
        """Stop ``deadline``; True when it fired and no other cancellation of its task is pending."""
        if not deadline.expired:
            self.wheel.cancel(deadline)
            if deadline.resumed is not None:
                self.wheel.cancel(deadline.resumed)
            return False
        return deadline.task.uncancel() <= deadline.cancelling

    @contextmanager
    def held(self, deadline: Deadline) -> Iterator[None]:
        """Stop ``deadline``'s clock while inside (the call waits for a person: engine.elicitation); it runs on
        with the time it had left. A deadline that already fired stays fired."""
        timer = deadline.resumed or deadline
        if deadline.expired or timer.cancelled:
            yield
            return
        loop = asyncio.get_running_loop()
        left = max(timer.when - loop.time(), 0.0)
        self.wheel.cancel(timer)
        try:
            yield
        finally:
            if not deadline.expired:
                deadline.resumed = self.wheel.call_later(left, _expire, deadline)


def _expire(deadline: Deadline) -> None:
    deadline.expired = True
    deadline.task.cancel()
