"""Which tool call an MCP server's elicitation belongs to.

Why it exists: the SDK hands an elicitation to one callback per connection, with nothing saying which
``tools/call`` it is part of. On 2026-07-28 connections the multi-round-trip driver runs the callback inside the
calling task, so a context variable set around the call names it; on 2025-era connections the request arrives
on the SDK's own reader task, so the connection also keeps the calls it has in flight: with exactly one, that is
the asker; with several the question cannot be placed, and it is declined rather than put to the wrong caller.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from engine.tools.base import ToolExecutionContext


@dataclass(frozen=True, slots=True)
class Asker:
    """The tool call a question comes from: its server, exposed and server-side names, and execution context."""

    server: str
    exposed_name: str
    tool: str
    ctx: ToolExecutionContext


_CURRENT: ContextVar[Asker | None] = ContextVar("ava_elicitation_asker", default=None)


class InFlight:
    """The calls one connection has in flight, to place a question that came without a context."""

    def __init__(self) -> None:
        self._calls: dict[int, Asker] = {}

    @contextmanager
    def calling(self, asker: Asker) -> Iterator[None]:
        key = id(asker)
        self._calls[key] = asker
        token = _CURRENT.set(asker)
        try:
            yield
        finally:
            _CURRENT.reset(token)
            self._calls.pop(key, None)

    def asker(self) -> tuple[Asker | None, int]:
        """The call asking (from the context, else the only one in flight) and how many calls are in flight."""
        current = _CURRENT.get()
        if current is not None:
            return current, len(self._calls)
        if len(self._calls) == 1:
            return next(iter(self._calls.values())), 1
        return None, len(self._calls)
