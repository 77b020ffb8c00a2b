"""One live call: who, which context and provider, its tier, its tool overrides, and its canonical history."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from engine.sessions.history import History
from engine.sessions.steering import SteerNote

#: ``operator``: a phone call the operator has taken over (its AI part ended, the call goes on).
CallState = Literal["starting", "active", "operator", "ending", "ended"]


class CallError(RuntimeError):
    """An operation on a call that cannot be done (unknown call, call ended, unknown context)."""


@dataclass(eq=False)
class CallSession:
    call_id: str
    context: str
    provider: str
    caller_name: str | None = None
    caller_number: str | None = None
    direction: Literal["inbound", "outbound"] = "inbound"
    campaign_id: str | None = None
    lead_id: str | None = None
    channel_id: str | None = None
    tier: str = "standard"
    tier_reason: str = "context default"
    tier_override: str | None = None
    #: False for the operator's own tool calls outside any call (``mcp call``, the tool inspector): no tier budget
    #: clamps them, each tool runs to its own ``timeout_ms``.
    tier_budget: bool = True
    history: History = field(default_factory=History)
    transcript_recipients: list[str] = field(default_factory=list)
    current_action: str | None = None
    state: CallState = "starting"
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    end_reason: str | None = None
    turn: int = 0
    #: Per-call tool switches from the operator: exposed name -> enabled.
    tool_overrides: dict[str, bool] = field(default_factory=dict)
    #: Bumped whenever this call's tool view may change (operator toggles, tier changes, registry changes).
    tools_revision: int = 0
    #: Exposed names of the tools this call was shown for its current turn (the execution allowlist).
    shown_tools: frozenset[str] = frozenset()
    last_deep_turn_at: float | None = None
    hangup_requested: bool = False
    farewell: str | None = None
    #: Phone calls: how the caller's audio flows ("rtp 127.0.0.1:18004", "websocket"); None off the phone.
    media: str | None = None
    #: Phone calls: the transfer in progress or done ("ringing support", "transferred to support", "failed: busy").
    transfer: str | None = None
    #: The operator's whispers not yet given to the model (the next turn's system prompt carries them, once).
    whispers: list[str] = field(default_factory=list)
    #: Every steering action on this call (say-now lines and whispers), oldest first.
    steering: list[SteerNote] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        end = self.ended_at if self.ended_at is not None else time.time()
        return max(0.0, end - self.started_at)

    @property
    def active(self) -> bool:
        return self.state in ("starting", "active")
