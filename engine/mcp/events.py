"""Events only the MCP host emits (the shared ones — ``server.state``, ``tools.changed`` — live in engine.events).

Why it exists: progress notifications from a long MCP call are worth showing (console spinner, CLI ``--json``),
and they are an MCP-specific event, so they are declared beside the code that emits them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.events import Event


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProgressed(Event):
    type: ClassVar[str] = "tool.progress"
    call_id: str
    tool_call_id: str
    exposed_name: str
    server: str
    progress: float
    total: float | None = None
    message: str | None = None
