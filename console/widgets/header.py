"""The header's "at a glance" line and the alarm when a server fails.

Why it exists: an operator on any screen must see at once whether things are well: how many calls are live, how
many MCP servers are up and how many failed, how many errors the last five minutes brought, and where the HTTP API
listens (off unless asked). The line is the header's sub-title (Textual's ``Header`` shows it on every screen),
before the config file's path, so a narrow header keeps the counts. A server that fails rings the terminal bell and
shows a notification naming it and its last error: a failure must not wait for someone to open the Servers screen.

Errors counted: ``engine.error`` events, tool calls that ended in ``error`` or ``timeout`` (probes excluded), and
servers failing. The window slides with the console's clock; the app re-reads it every few seconds while any error
is in it, so the count falls back without new events.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engine's events load after the first frame
    from console.state import ConsoleState
    from engine import Engine
    from engine.events import Event

#: Server states that count as up, and as failed (the Servers screen's symbols: console/format.py).
UP = frozenset({"ready", "up", "running"})
FAILED = frozenset({"failed", "crashed", "unhealthy"})
#: The error window, seconds.
WINDOW_S = 300.0


class Glance:
    """What the header counts beyond the console state: recent errors, and which servers are failed now."""

    def __init__(self) -> None:
        self.errors: deque[float] = deque(maxlen=10_000)
        self.failed: set[str] = set()

    def apply(self, events: Iterable[Event]) -> list[tuple[str, str]]:
        """Fold in a batch; the servers that failed in it (name, last error), each once per failure."""
        from engine.events import EngineError, ServerStateChanged, ToolCompleted

        newly_failed: list[tuple[str, str]] = []
        for ev in events:
            if isinstance(ev, ServerStateChanged):
                if ev.state in FAILED:
                    if ev.server not in self.failed:
                        self.failed.add(ev.server)
                        self.errors.append(ev.ts)
                        newly_failed.append((ev.server, ev.last_error or ev.state))
                else:
                    self.failed.discard(ev.server)
            elif isinstance(ev, EngineError):
                self.errors.append(ev.ts)
            elif isinstance(ev, ToolCompleted) and ev.status in ("error", "timeout") and not ev.is_probe:
                self.errors.append(ev.ts)
        return newly_failed

    def recent_errors(self, now: float) -> int:
        """Errors within ``WINDOW_S`` of ``now`` (older ones are forgotten)."""
        since = now - WINDOW_S
        while self.errors and self.errors[0] < since:
            self.errors.popleft()
        return sum(ts >= since for ts in self.errors)  # events of one batch may come slightly out of order


def glance_line(state: ConsoleState, glance: Glance, now: float, api_url: str | None) -> str:
    """``2 calls (1 with operator) · servers 3 up, 1 failed · 4 errors/5 min · API http://…`` (the operator's
    part when they listen, whisper or have a call; API only when it is served)."""
    calls = len(state.calls)
    with_operator = sum(bool(row.operator) for row in state.calls.values())
    states = [s.state for s in state.servers.values()]
    up = sum(s in UP for s in states)
    failed = sum(s in FAILED for s in states)
    errors = glance.recent_errors(now)
    servers = f"servers {up} up" + (f", {failed} failed" if failed else "")
    count = f"{calls} call{'' if calls == 1 else 's'}" + (f" ({with_operator} with operator)" if with_operator else "")
    parts = [count, servers, f"{errors} error{'' if errors == 1 else 's'}/5 min"]
    if api_url:
        parts.append(f"API {api_url}")
    return " · ".join(parts)


def api_url(engine: Engine | None) -> str | None:
    """Where the engine's HTTP API listens, or None when it is not served (the console's default) or there is no
    engine of this console's own (replay, attached)."""
    return engine.api_url() if engine is not None else None
