"""The events behind the console's latency waterfall and speaking timeline (``turn.timings``, ``speaking.changed``).

Why a module of its own: ``engine.events`` is the list every part shares and stays under 400 lines; these three
belong together (a turn's stages, and who was talking). Import them from ``engine.events`` (which re-exports them
once ``Event`` exists), never from here: this module needs ``engine.events`` loaded first.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from engine.events.catalog import Event


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStage:
    """One stage of a turn: ``start_ms`` from the turn's start (the caller stopped talking, or the text arrived)."""

    name: str  # endpointing | stt | model | tool | tts | playout
    start_ms: float
    duration_ms: float
    label: str = ""  # a tool's exposed name
    server: str = ""  # a tool's MCP server ("builtin" for the engine's own)
    status: str = ""  # a tool's result status; "cut" for playout stopped by barge-in


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnTimings(Event):
    """Where one turn's time went (engine.calls.turn_timing): one per turn, published once its audio has played.
    ``latency_ms``: from the turn's start to the answer's first audio (to the reply's text on a text call)."""

    type: ClassVar[str] = "turn.timings"
    call_id: str
    turn: int
    tier: str
    budget_ms: int
    latency_ms: float
    stages: tuple[TurnStage, ...] = ()
    #: The turn's start (its stages' zero) as wall-clock seconds, like ``ts``: a trace places its spans by it.
    started_at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """As JSON has it: the stages as a list of objects (also when a replay rebuilt them as dicts)."""
        out = Event.to_dict(self)  # not super(): a slots dataclass is a new class
        out["stages"] = [s if isinstance(s, dict) else dataclasses.asdict(s) for s in self.stages]
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeakingChanged(Event):
    """The caller or the agent started or stopped talking on a voice call; ``barge_in``: the caller cut the agent."""

    type: ClassVar[str] = "speaking.changed"
    call_id: str
    who: str  # "caller" | "agent"
    speaking: bool
    barge_in: bool = False
