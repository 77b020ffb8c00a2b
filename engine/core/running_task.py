"""The task running the caller, without a system call: the tool path asks for it on every tool call.

Why it exists: on Python 3.11 ``asyncio.current_task()`` first asks for the running loop, and the C helper behind
that compares the loop's process id with ``getpid()`` — a system call on every tool call (glibc no longer caches
the pid), which profiles of the tool path showed as its largest single cost, more than building either of its
events. The tasks being stepped are kept in asyncio's own ``_current_tasks`` (loop → the task it is stepping), so
when exactly one loop is stepping a task and the caller runs inside a task, that task is the caller's: the
caller's own loop is stepping it, and a loop in another thread that was stepping one too would make two entries.
In any other case (no entry, several loops at once) it asks asyncio. Only on 3.11, where this was measured: later
versions rework how asyncio keeps its running loop and tasks, and there this module is ``asyncio.current_task``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from engine._compat.stdlib import stepping_tasks

__all__ = ["current_task"]


def _current_task_311() -> asyncio.Task[Any] | None:
    """``asyncio.current_task()`` for a caller that runs inside a task (see the module docstring)."""
    if len(_stepping) == 1:
        for task in _stepping.values():
            return task
    return asyncio.current_task()


if sys.version_info[:2] != (3, 11):
    current_task = asyncio.current_task
else:  # pragma: no cover - the branch taken depends on the interpreter
    _stepping = stepping_tasks() or {}
    current_task = _current_task_311
