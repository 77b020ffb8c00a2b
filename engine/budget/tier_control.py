"""The calls' latency tiers: the operator's default, the queue depth, and the one place a call's tier changes.

Why it exists: the budget layer's selector picks a tier for every turn and the operator overrides tiers from the
keyboard; both must change a call's tier the same way (bump the call's tool revision, count it, publish
``tier.changed``). The budget layer gets this object through the narrow ``CallTiers`` protocol instead of
calling back into the engine.
"""

from __future__ import annotations

from typing import Protocol

from engine.core.metrics import Metrics
from engine.events import EventBus, TierChanged
from engine.sessions.session import CallSession

TIERS = ("fast", "standard", "deep")


class CallTiers(Protocol):
    """What the budget layer reads (the operator's default tier, callers waiting) and sets (a call's tier)."""

    @property
    def default_tier(self) -> str: ...

    @property
    def waiting_callers(self) -> int: ...

    def set_call_tier(self, session: CallSession, tier: str, reason: str) -> None: ...


class TierControl:
    """The engine's tier state; satisfies ``CallTiers``."""

    def __init__(self, bus: EventBus, metrics: Metrics, default_tier: str) -> None:
        self._bus = bus
        self._metrics = metrics
        #: The operator's global default: a tier, or "auto" (each context's own default).
        self.default_tier = default_tier
        #: Callers waiting for an agent (the selector drops to FAST past ``queue_depth_fast``).
        self.waiting_callers = 0

    def set_call_tier(self, session: CallSession, tier: str, reason: str) -> None:
        """Set a call's tier; a real change re-renders its tool view and publishes ``tier.changed``."""
        if tier == session.tier and reason == session.tier_reason:
            return
        old = session.tier
        session.tier, session.tier_reason = tier, reason
        session.tools_revision += 1
        self._metrics.tier_changes.labels(reason.split(":")[0][:40]).inc()
        self._bus.publish(TierChanged(call_id=session.call_id, old=old, new=tier, reason=reason))

    def set_default(self, tier: str) -> None:
        """The operator's global default (a tier or "auto")."""
        if tier not in (*TIERS, "auto"):
            raise ValueError(f"unknown tier {tier!r} (fast, standard, deep or auto)")
        old, self.default_tier = self.default_tier, tier
        self._bus.publish(TierChanged(call_id=None, old=old, new=tier, reason="operator set the default"))
