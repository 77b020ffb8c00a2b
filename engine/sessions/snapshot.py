"""Plain, frozen snapshots of live calls and their tools: what the engine's queries hand to UIs.

Why it exists: the console (and any other UI) must not hold or mutate the engine's ``CallSession`` objects; it asks
``Engine.calls_info()`` / ``call_info(id)`` / ``tool_states(id)`` and gets these copies, taken at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.sessions.session import CallSession


@dataclass(frozen=True, slots=True)
class CallInfo:
    """One live call as the operator sees it."""

    call_id: str
    context: str
    provider: str
    caller_name: str | None
    caller_number: str | None
    direction: str
    state: str
    tier: str
    tier_reason: str
    tier_override: str | None
    turn: int
    started_at: float
    #: Phone calls only: Asterisk's channel, the media path, the transfer state.
    channel_id: str | None = None
    media: str | None = None
    transfer: str | None = None

    @classmethod
    def of(cls, s: CallSession) -> CallInfo:
        return cls(
            call_id=s.call_id,
            context=s.context,
            provider=s.provider,
            caller_name=s.caller_name,
            caller_number=s.caller_number,
            direction=s.direction,
            state=s.state,
            tier=s.tier,
            tier_reason=s.tier_reason,
            tier_override=s.tier_override,
            turn=s.turn,
            started_at=s.started_at,
            channel_id=s.channel_id,
            media=s.media,
            transfer=s.transfer,
        )


@dataclass(frozen=True, slots=True)
class ToolState:
    """One tool of a live call: shown on its next turn or hidden (and why), and the operator's switch."""

    name: str
    server: str
    #: Offered to the model on the call's next turn.
    shown: bool
    #: The operator's switch for this call (False only when switched off; a hidden tool may still be "on").
    enabled: bool
    #: Why a hidden tool is hidden ("" when shown).
    reason: str = ""


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """One e-mail in the outbox as the operator sees it (addresses shown: the console is the operator's own)."""

    message_id: str
    kind: str
    to: tuple[str, ...]
    subject: str
    status: str
    attempts: int
    resent: bool
    updated_at: float
    last_error: str | None
    call_id: str | None = None
    #: A pending message's next attempt (epoch seconds); None for any other status.
    next_attempt_at: float | None = None
