"""The engine's one task group: every background task the engine starts is named and lives here.

Why it exists: background work (MCP supervisors, lazy-start watchers, calibrations, the MCP endpoint's session
manager, the softphone's voice call) must end when the engine stops, and one failing task must not take the
engine down. ``asyncio.TaskGroup`` cancels every sibling when one fails, so this is a small supervisor instead:
``spawn(coro, name=...)`` starts a named task inside the group; a task that fails is logged and reported through
``on_failure`` (the engine publishes ``engine.error``, which the console's event log shows) and kept in ``stopped``
(``/health`` lists them and says "degraded": a writer that stopped must not look healthy); ``close()`` cancels
whatever is still running and waits for all of it. Parts get the narrow ``Spawn`` callable, never the group or
the engine.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from engine.bounds.json_text import valid_text

log = logging.getLogger(__name__)

T = TypeVar("T")
#: How long ``close`` waits for cancelled tasks to finish before it gives up on them (and says so).
CLOSE_TIMEOUT_S = 10.0
#: How many stopped tasks ``stopped`` keeps (the newest): enough to say what broke, never a growing list.
STOPPED_KEPT = 20


class Spawn(Protocol):
    """Start ``coro`` as a named background task of the engine (the one thing parts may do with the group)."""

    def __call__(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]: ...


class TaskGroupClosed(RuntimeError):
    """A task was spawned after the engine stopped."""


class EngineTasks:
    """Named background tasks: spawned while open, each failure logged and reported, all cancelled by ``close``."""

    def __init__(self, on_failure: Callable[[str, BaseException], None] | None = None) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._on_failure = on_failure
        self.closed = False
        self.failures = 0
        #: The tasks that failed since the group was opened, oldest first (``{"task", "error"}``, the last
        #: ``STOPPED_KEPT``): what ``/health`` reports.
        self.stopped: list[dict[str, str]] = []

    def open(self) -> None:
        """(Re)open the group; the engine does this at start (a stopped engine may be started again)."""
        self.closed = False
        self.stopped = []

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
        if not name:
            coro.close()
            raise ValueError("every engine task needs a name")
        if self.closed:
            coro.close()
            raise TaskGroupClosed(f"the engine is stopped: task {name!r} was not started")
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    __call__ = spawn

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        self.failures += 1
        self.stopped = [*self.stopped[-(STOPPED_KEPT - 1) :], {"task": task.get_name(), "error": _why(exc)}]
        # the traceback as valid text: an exception's message may hold a lone surrogate, which no log handler
        # (nor a test runner's capture) can write
        trace = valid_text("".join(traceback.format_exception(exc)))
        log.error("engine task %s failed: %s\n%s", task.get_name(), valid_text(f"{type(exc).__name__}: {exc}"), trace)
        if self._on_failure is not None:
            try:
                self._on_failure(task.get_name(), exc)
            except Exception as e:  # reporting a failure must never fail the loop's callback
                log.warning("reporting the failure of %s failed: %s", task.get_name(), e)

    def health(self) -> dict[str, object]:
        """``/health``'s view: "ok", or "degraded" with the tasks that stopped and why."""
        if not self.stopped:
            return {"status": "ok"}
        return {"status": "degraded", "stopped": list(self.stopped)}

    def names(self) -> list[str]:
        """The running tasks' names (sorted), for status pages and tests."""
        return sorted(t.get_name() for t in self._tasks if not t.done())

    def __len__(self) -> int:
        return sum(1 for t in self._tasks if not t.done())

    async def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """Refuse new tasks, cancel the running ones and wait for them (tasks they spawn while ending too)."""
        self.closed = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self._tasks:
            pending = [t for t in self._tasks if not t.done()]
            if not pending:
                break
            for t in pending:
                t.cancel()
            remaining = deadline - loop.time()
            if remaining <= 0:
                log.warning(
                    "engine tasks still running after %.0f s: %s", timeout_s, ", ".join(t.get_name() for t in pending)
                )
                return
            await asyncio.wait(pending, timeout=remaining)
        self._tasks.clear()


def _why(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    # an exception's text may hold what made it (a lone surrogate): /health must stay valid JSON text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")[:500]
