"""The operator's switches on a live call, as part of the engine's public API: its tier, and each of its tools.

Why apart from ``engine.app``: the tier override (a tier or back to "auto") and the tool switch (next turn, or "now":
the turn in flight restarts) are commands on one call, kept out of the composition root. The engine's facade
forwards to a ``CallSwitches`` handed the call manager, the tier control, the budget's default tier for a call,
the registry and the bus.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

from engine.budget.tier_control import TIERS
from engine.events import ToolsChanged
from engine.sessions.snapshot import ToolState

if TYPE_CHECKING:
    from engine.budget.selector import Decision
    from engine.budget.tier_control import TierControl
    from engine.calls.manager import CallManager
    from engine.events import EventBus
    from engine.sessions.session import CallSession
    from engine.tools.registry import ToolRegistry


class DefaultTier(Protocol):
    """The budget layer's tier for a call without an override (its context's default, or the selector's)."""

    def default_for(self, session: CallSession) -> Decision: ...


class CallSwitches:
    def __init__(
        self, calls: CallManager, tiers: TierControl, budget: DefaultTier, registry: ToolRegistry, bus: EventBus
    ) -> None:
        self.calls = calls
        self.tiers = tiers
        self.budget = budget
        self.registry = registry
        self.bus = bus

    def tool_states(self, call_id: str) -> list[ToolState]:
        """The call's tools for its next turn: shown ones first (in view order), then hidden ones with the reason,
        each with the operator's on/off switch. ``CallError`` when there is no such live call."""
        session = self.calls.session(call_id)
        view = self.calls.view_for(session)
        out = [ToolState(t.name, t.tool.definition.server, True, True) for t in view.tools]
        shown = {t.name for t in out}
        for name, reason in view.hidden:
            if name not in shown:
                entry = self.registry.get(name)
                server = entry.tool.definition.server if entry is not None else ""
                out.append(ToolState(name, server, False, session.tool_overrides.get(name) is not False, reason))
        return out

    def set_tier(self, call_id: str | None, tier: str) -> None:
        """Operator override: a tier or "auto" for one call, or (call_id None) for the global default."""
        if tier not in (*TIERS, "auto"):
            raise ValueError(f"unknown tier {tier!r} (fast, standard, deep or auto)")
        if call_id is None:
            self.tiers.set_default(tier)
            return
        session = self.calls.session(call_id)
        if tier == "auto":
            session.tier_override = None
            default = self.budget.default_for(session)
            self.tiers.set_call_tier(session, default.tier, f"operator cleared the override: {default.reason}")
        else:
            session.tier_override = tier
            self.tiers.set_call_tier(session, tier, "operator override")

    def set_tool_enabled(
        self, call_id: str, exposed_name: str, enabled: bool, apply: Literal["next_turn", "now"] = "next_turn"
    ) -> bool:
        """Switch a tool on or off for a live call; "now" cancels the turn in flight and restarts it."""
        if apply not in ("next_turn", "now"):
            raise ValueError(f"apply must be 'next_turn' or 'now', not {apply!r}")
        session = self.calls.session(call_id)
        session.tool_overrides[exposed_name] = enabled
        session.tools_revision += 1
        restarted = self.calls.restart_turn(call_id) if apply == "now" else False
        self.bus.publish(
            ToolsChanged(
                revision=session.tools_revision,
                call_id=call_id,
                added=(exposed_name,) if enabled else (),
                removed=() if enabled else (exposed_name,),
                apply="now" if restarted else "next_turn",
            )
        )
        return restarted
