"""Which tool call an MCP server's elicitation belongs to.

Why it exists: the SDK hands an elicitation to one callback per connection, with nothing saying which
``tools/call`` it is part of. On 2026-07-28 connections the multi-round-trip driver runs the callback inside the
calling task, so a context variable set around the call names it; on 2025-era connections the request arrives
on the SDK's own reader task, so the connection also keeps the calls it has in flight: with exactly one, that is
the asker; with several the question cannot be placed, and it is declined rather than put to the wrong caller.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
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

    def calling(self, asker: Asker) -> _Calling:
        """``with in_flight.calling(asker):`` around one call (a plain context manager: it wraps every MCP call,
        and a generator-based one costs several frames more)."""
        return _Calling(self._calls, asker)

    def asker(self) -> tuple[Asker | None, int]:
        """The call asking (from the context, else the only one in flight) and how many calls are in flight."""
        current = _CURRENT.get()
        if current is not None:
            return current, len(self._calls)
        if len(self._calls) == 1:
            return next(iter(self._calls.values())), 1
        return None, len(self._calls)


class _Calling:
    """One call in flight: listed, and the context's asker, while inside."""

    __slots__ = ("_asker", "_calls", "_token")

    def __init__(self, calls: dict[int, Asker], asker: Asker) -> None:
        self._calls = calls
        self._asker = asker
        self._token: Token[Asker | None] | None = None

    def __enter__(self) -> None:
        asker = self._asker
        self._calls[id(asker)] = asker
        self._token = _CURRENT.set(asker)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CURRENT.reset(self._token)
        self._calls.pop(id(self._asker), None)
