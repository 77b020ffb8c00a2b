"""The records ``console.state`` keeps and hands to screens: a call's row, a tool invocation, a server's row, a log
line, and the ``Changes`` of one batch.

Why a module of its own: plain data that screens import by name, apart from the event handling that fills it
(``console.state``), which kept that module under 400 lines. ``console.state`` re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CallRow:
    call_id: str
    context: str
    provider: str
    caller: str
    tier: str
    tier_reason: str = "context default"
    state: str = "active"
    started_at: float = 0.0
    ended_at: float | None = None
    end_reason: str | None = None
    tools_note: str = ""
    #: The operator on this phone call (``call.monitor_changed``): listen, whisper_*, takeover; "" when not.
    operator: str = ""
    #: What the call has cost so far (``usage.updated``, ``call.usage``), US dollars; None: unpriced or no usage yet.
    cost: float | None = None


@dataclass
class Invocation:
    seq: int
    ts: float
    call_id: str
    tool_call_id: str
    exposed_name: str
    server: str
    tool: str
    status: str = "running"
    latency_ms: float | None = None
    cache_hit: bool = False
    arguments: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    data: Any = None
    is_probe: bool = False
    #: The last progress the tool's server reported while it ran (``tool.progress``), and of how much.
    progress: float | None = None
    progress_total: float | None = None
    #: Whom the tool's question waits for (``elicitation.waiting``: caller or operator), None when nothing.
    waiting: str | None = None

    def matches(self, text: str) -> bool:
        needle = text.lower()
        hay = f"{self.call_id} {self.exposed_name} {self.server} {self.tool} {self.status} {self.message}"
        return needle in hay.lower()


@dataclass
class ServerRow:
    server: str
    state: str
    restarts: int = 0
    last_error: str | None = None
    ts: float = 0.0
    transport: str = ""
    protocol_version: str = ""


@dataclass
class LogLine:
    ts: float
    type: str
    call_id: str | None
    text: str


@dataclass
class Changes:
    """What one batch changed; screens update just these."""

    calls_added: list[str] = field(default_factory=list)
    calls_changed: set[str] = field(default_factory=set)
    calls_removed: list[str] = field(default_factory=list)
    #: Ended calls dropped from the history (past ``MAX_ENDED_KEPT``): their rows go.
    calls_forgotten: list[str] = field(default_factory=list)
    transcripts: set[str] = field(default_factory=set)
    tools_changed: set[str] = field(default_factory=set)
    invocations_added: list[Invocation] = field(default_factory=list)
    invocations_changed: list[Invocation] = field(default_factory=list)
    servers: set[str] = field(default_factory=set)
    log: list[LogLine] = field(default_factory=list)
    default_tier: str | None = None
    config_reloaded: bool = False

    @property
    def empty(self) -> bool:
        return not (
            self.calls_added
            or self.calls_changed
            or self.calls_removed
            or self.calls_forgotten
            or self.transcripts
            or self.tools_changed
            or self.invocations_added
            or self.invocations_changed
            or self.servers
            or self.log
            or self.default_tier
            or self.config_reloaded
        )
