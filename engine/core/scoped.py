"""``bound``: a context variable set for the length of a block, the one way the engine scopes a flag or a box.

Why it exists: the call legs and admissions (``engine.calls.capacity``), the operator's say-now delivery
(``engine.sessions.steering``) and the MCP passthrough boxes (``engine.mcp.passthrough``) each wrote the same
set-try-yield-reset block around their own variable.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def bound(var: ContextVar[T], value: T) -> Iterator[T]:
    """``var`` is ``value`` inside the block (and in the tasks started from it); afterwards, what it was before."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)
