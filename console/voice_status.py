"""What the softphone panel shows, folded from the softphone's own events.

Apart from ``console.state`` (the calls, tools and log every screen reads): only the voice panel reads this, and the
app updates it from the ``softphone.*`` events before the rest of a batch reaches the state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.events import Event


@dataclass
class VoiceStatus:
    """What the softphone panel shows: the voice call's state, mic level, mute, push-to-talk, or the problem."""

    state: str = "idle"
    level_dbfs: float = -120.0
    #: The agent's voice as played (``softphone.level``'s ``agent_dbfs``).
    agent_dbfs: float = -120.0
    muted: bool = False
    talking: bool = False
    problem: str | None = None

    def apply(self, events: Iterable[Event]) -> bool:
        """Fold in the softphone's ``softphone.state`` / ``softphone.level`` events; True if the call's state
        changed (not just the level)."""
        from engine.events import SoftphoneLevel, SoftphoneStateChanged

        state_changed = False
        for event in events:
            if isinstance(event, SoftphoneStateChanged):
                self.state, self.muted, self.level_dbfs = event.state, event.muted, event.level_dbfs
                if event.state in ("idle", "ended"):
                    self.talking = False
                state_changed = True
            elif isinstance(event, SoftphoneLevel):
                self.level_dbfs, self.agent_dbfs = event.level_dbfs, event.agent_dbfs
        return state_changed
