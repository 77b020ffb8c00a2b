"""The events the engine tells the world about (calls, tools, tiers, servers, the softphone …).

Events are frozen dataclasses named in the past tense; as JSON lines their ``type`` is dotted (``tool.completed``).
``EventBus.publish`` never blocks the engine: every subscriber has its own bounded queue that drops its oldest
event when full and counts the drops, so a slow console or a stalled CLI pipe cannot slow a call down.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    type: ClassVar[str] = "event"
    ts: float = field(default_factory=time.time)

    if TYPE_CHECKING:

        @classmethod
        def build(cls, **fields: Any) -> Self:
            """A new event, as calling the class makes it, for hot paths (``engine.events.fast_init``): calling a class
            with keywords packs them into a dict first. The class's own signature applies (checked at run time)."""
            ...

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):
            out[f.name] = getattr(self, f.name)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=json_default, ensure_ascii=False)


def json_default(o: Any) -> Any:
    """What an event's JSON makes of a value json cannot encode: a dataclass as its dict, a set or tuple as a list,
    anything else as its text (the recorder's lines use the same rule)."""
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    return str(o)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallStarted(Event):
    type: ClassVar[str] = "call.started"
    call_id: str
    context: str
    provider: str
    caller_name: str | None = None
    caller_number: str | None = None
    direction: str = "inbound"
    tier: str = "standard"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallEnded(Event):
    type: ClassVar[str] = "call.ended"
    call_id: str
    reason: str
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TranscriptAdded(Event):
    type: ClassVar[str] = "transcript.added"
    call_id: str
    role: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRequested(Event):
    type: ClassVar[str] = "tool.requested"
    call_id: str
    tool_call_id: str
    exposed_name: str
    server: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    is_probe: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCompleted(Event):
    type: ClassVar[str] = "tool.completed"
    call_id: str
    tool_call_id: str
    exposed_name: str
    server: str
    tool: str
    status: str
    latency_ms: float
    message: str
    cache_hit: bool = False
    is_probe: bool = False
    data: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProgressed(Event):
    """Progress an MCP server reported for a call in flight (console spinner, CLI ``--json``)."""

    type: ClassVar[str] = "tool.progress"
    call_id: str
    tool_call_id: str
    exposed_name: str
    server: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRejected(Event):
    type: ClassVar[str] = "tool.rejected"
    call_id: str
    tool_call_id: str
    exposed_name: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApprovalRequested(Event):
    """A tool call waits for the operator (engine.tools.approvals): ``reason`` says why, ``deadline`` (epoch seconds)
    until when; ``arguments`` are masked like every event's."""

    type: ClassVar[str] = "tool.approval_requested"
    approval_id: str
    call_id: str
    tool_call_id: str
    exposed_name: str
    server: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    timeout_s: float = 0.0
    deadline: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApprovalResolved(Event):
    """How a wait for approval ended: ``outcome`` approved, denied, timed_out or cancelled, ``by`` whom."""

    type: ClassVar[str] = "tool.approval_resolved"
    approval_id: str
    call_id: str
    tool_call_id: str
    exposed_name: str
    outcome: str
    by: str
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TierChanged(Event):
    type: ClassVar[str] = "tier.changed"
    call_id: str | None
    old: str
    new: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolsChanged(Event):
    type: ClassVar[str] = "tools.changed"
    revision: int
    call_id: str | None = None
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    apply: str = "next_turn"
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolsOmitted(Event):
    """The call's view has more tools than its provider takes in one request: these were left out of it."""

    type: ClassVar[str] = "tools.omitted"
    call_id: str | None
    provider: str
    limit: int
    omitted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RateLimit:
    """One of a provider's rate limits (``requests``, ``tokens``): its size, what is left, seconds to its reset."""

    name: str
    limit: int | None = None
    remaining: int | None = None
    reset_seconds: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderRateLimits(Event):
    """A provider said how much of its rate limits is left (OpenAI Realtime ``rate_limits.updated``, sent as each
    response starts); the ``ai_agent_provider_rate_limit_remaining`` gauge follows it."""

    type: ClassVar[str] = "provider.rate_limits"
    call_id: str | None
    provider: str
    limits: tuple[RateLimit, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CallTransferStarted(Event):
    """A phone call's transfer began: ``target`` (a ``tools.extensions`` name) is ringing."""

    type: ClassVar[str] = "call.transfer_started"
    call_id: str
    target: str
    destination: str
    mode: str = "warm"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallTransferAnswered(Event):
    """The target answered and the caller was handed over (``handoff_ms``: the four-step hand-off)."""

    type: ClassVar[str] = "call.transfer_answered"
    call_id: str
    target: str
    handoff_ms: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CallTransferFailed(Event):
    type: ClassVar[str] = "call.transfer_failed"
    call_id: str
    target: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CallTransferCancelled(Event):
    type: ClassVar[str] = "call.transfer_cancelled"
    call_id: str
    target: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CallMonitorChanged(Event):
    """The operator's place on a phone call: ``off``, ``listen``, ``whisper`` or ``takeover``."""

    type: ClassVar[str] = "call.monitor_changed"
    call_id: str
    mode: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerStateChanged(Event):
    """An MCP server's new state; ``transport`` and ``protocol_version`` (once up) let a replay show the server."""

    type: ClassVar[str] = "server.state"
    server: str
    state: str
    restarts: int = 0
    last_error: str | None = None
    transport: str = ""
    protocol_version: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnouncementPlayed(Event):
    type: ClassVar[str] = "announcement.played"
    call_id: str
    text: str
    reason: str = "slow_tool"


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnouncementRequested(Event):
    type: ClassVar[str] = "announcement.requested"
    call_id: str
    text: str
    exposed_name: str
    reason: str = "slow_tool"


@dataclass(frozen=True, slots=True, kw_only=True)
class SteeringInjected(Event):
    """The operator steered a live call: ``say`` (the agent says ``text`` next) or ``whisper`` (a hidden
    instruction for its next turn, ``hidden`` from the caller); ``via`` is how it reached the provider."""

    type: ClassVar[str] = "steering.injected"
    call_id: str
    kind: str
    text: str
    via: str
    hidden: bool = False
    turn: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOverBudget(Event):
    type: ClassVar[str] = "turn.over_budget"
    call_id: str
    tier: str
    budget_ms: int
    latency_ms: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigReloaded(Event):
    type: ClassVar[str] = "config.reloaded"
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineError(Event):
    type: ClassVar[str] = "engine.error"
    message: str
    call_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SoftphoneStateChanged(Event):
    """The local softphone's state ("idle", or its voice call's: starting, listening, hearing, thinking,
    speaking, ended), mute or push-to-talk changed."""

    type: ClassVar[str] = "softphone.state"
    state: str
    muted: bool = False
    push_to_talk: bool = False
    call_id: str | None = None
    level_dbfs: float = -120.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SoftphoneLevel(Event):
    """The softphone's microphone input level and the agent's (the loudest of what it played since the last
    event; at most every ``level_interval_s``; frequent, so a slow subscriber loses the oldest ones first,
    counted like every drop)."""

    type: ClassVar[str] = "softphone.level"
    level_dbfs: float
    agent_dbfs: float = -120.0
    call_id: str | None = None
