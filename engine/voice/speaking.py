"""Who is talking on a voice call, as ``speaking.changed`` events for the console's speaking timeline.

Why here: both voice drivers (the local pipeline and the realtime driver) already reduce their call to one
``CallState`` on every change; the caller talks while it is ``hearing`` and the agent while it is ``speaking``.
The tap turns those transitions into start/stop events (a few per turn, never per audio frame), and marks the
agent's stop that a barge-in caused.
"""

from __future__ import annotations

from engine.events import EventBus, SpeakingChanged

_LANES = {"hearing": "caller", "speaking": "agent"}


class SpeakingTap:
    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self._talking: str | None = None  # the lane talking now ("caller" | "agent")
        self._barge_in = False

    def barge_in(self) -> None:
        """The caller cut the agent off: the agent's next stop is marked as a barge-in."""
        self._barge_in = True

    def state(self, call_id: str | None, state: str) -> None:
        """The driver's call state changed to ``state`` (a ``CallState`` value)."""
        lane = _LANES.get(state)
        if lane == self._talking:
            return
        if call_id is not None and self._talking is not None:
            barge = self._barge_in and self._talking == "agent"
            self.bus.publish(SpeakingChanged(call_id=call_id, who=self._talking, speaking=False, barge_in=barge))
        if self._talking == "agent":
            self._barge_in = False
        self._talking = lane
        if call_id is not None and lane is not None:
            self.bus.publish(SpeakingChanged(call_id=call_id, who=lane, speaking=True))
