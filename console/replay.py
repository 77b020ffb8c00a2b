"""Replay of a recorded call through the console's own screens: the recorded events go down the path live ones take.

Why the same path: a replay must show what the operator saw, so the same ``ConsoleState.apply`` and screens
handle the recorded events. But a replay is history: its batches (``ReplayBatch``, console/replay_controls.py)
never reach the approval queue, the question dialogs or the softphone panel, so nothing in it is actionable. The
engine is not needed (``ava-console --replay FILE``); in a console with a live engine (Ctrl+O) the replayed calls
are renamed ``replay:<call id>`` and moved to the present, so they never collide with live calls, and they are
history rows from their first event (``ConsoleState``): never in the live calls, the header's counts or a key's
reach. Speed: 1×, 4× or instant, switched while it runs (Ctrl+R); the ``ReplayClock`` gives the screens the
replay's time (call durations).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.format import Clock

if TYPE_CHECKING:
    from engine.events import Event

#: The speeds Ctrl+R cycles through (0: instant, everything at once).
SPEEDS = (1.0, 4.0, 0.0)
#: Replayed call ids in a console that has live calls too.
PREFIX = "replay:"
#: Events per message when replaying instantly (the screens stay responsive on a long call).
CHUNK = 2000
#: Recorded events a replay beside a live engine leaves out (the live engine's servers are the real ones).
LIVE_ONLY_TYPES = frozenset({"server.state"})
#: The longest the replay sleeps at once, so a speed change takes effect at once.
MAX_SLEEP_S = 0.1


def is_replayed(call_id: str | None) -> bool:
    """Whether ``call_id`` is a replayed call's in a console with live calls: history, nothing to act on."""
    return bool(call_id) and str(call_id).startswith(PREFIX)


def speed_label(speed: float) -> str:
    return "instant" if speed == 0 else f"{speed:g}×"


def parse_speed(text: str) -> float:
    """``1``, ``4``, ``1x``, ``instant`` → a speed; ValueError naming the choices."""
    t = text.strip().lower().rstrip("x×")
    if t in ("instant", "0", "max"):
        return 0.0
    try:
        value = float(t)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ValueError(f"replay speed {text!r}: use 1, 4 or instant")
    return value


class Replay:
    """One recording being replayed: its events (renamed and shifted when ``live`` calls share the console)."""

    def __init__(
        self,
        path: Path,
        events: Sequence[Event],
        speed: float = 1.0,
        *,
        rename: bool = False,
        shift_to: float | None = None,
    ) -> None:
        self.path = path
        self.rename = rename
        t0 = events[0].ts if events else 0.0
        shift = (shift_to - t0) if shift_to is not None else 0.0
        # Beside a live engine, the Servers screen shows the live servers, not the recorded ones.
        self.events = [_moved(e, shift, rename) for e in events if not (rename and e.type in LIVE_ONLY_TYPES)]
        self.t0 = self.events[0].ts if self.events else 0.0
        # the latest event, not the last: a recording's events may be slightly out of order, and the replay's
        # clock stops at ``end`` (an earlier end left the events after it waiting for ever)
        self.end = max((e.ts for e in self.events), default=0.0)
        self.speed = speed
        self.position = 0
        self._anchor_wall = time.monotonic()
        self._anchor_virtual = self.t0
        self.done = False

    @classmethod
    def load(cls, path: str | Path, speed: float = 1.0, *, live: bool = False) -> Replay:
        """Read a recording (``RecordingError`` when it is none); ``live``: a live engine shares the console."""
        from engine import read_recording

        rec = read_recording(path)
        events = rec.events()
        return cls(rec.path, events, speed, rename=live, shift_to=time.time() if live else None)

    @property
    def call_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for e in self.events:
            cid = getattr(e, "call_id", None)
            if isinstance(cid, str) and cid:
                seen.setdefault(cid, None)
        return list(seen)

    def owns(self, call_id: str) -> bool:
        return call_id in self.call_ids

    def now(self) -> float:
        """The replay's time: where the recording is (the last event's time once it is over)."""
        if self.done:
            return self.end
        v = self._anchor_virtual + (time.monotonic() - self._anchor_wall) * self.speed
        return min(v, self.end)

    def set_speed(self, speed: float) -> None:
        v = self.now()
        self._anchor_wall, self._anchor_virtual, self.speed = time.monotonic(), v, speed

    def next_speed(self) -> float:
        i = SPEEDS.index(self.speed) if self.speed in SPEEDS else -1
        self.set_speed(SPEEDS[(i + 1) % len(SPEEDS)])
        return self.speed

    async def run(self, post: Callable[[list[Event]], Any]) -> None:
        """Post the events in recorded order and, unless instant, at their recorded pace."""
        self._anchor_wall, self._anchor_virtual = time.monotonic(), self.t0
        events, n = self.events, len(self.events)
        while self.position < n:
            i = self.position
            if self.speed == 0:
                j = min(n, i + CHUNK)
            else:
                v = self.now()
                j = i
                while j < n and events[j].ts <= v:
                    j += 1
                if j == i:
                    await asyncio.sleep(min(MAX_SLEEP_S, (events[i].ts - v) / self.speed))
                    continue
            post(events[i:j])
            self.position = j
            await asyncio.sleep(0)
        self.done = True


def _moved(ev: Event, shift: float, rename: bool) -> Event:
    changes: dict[str, Any] = {}
    if shift:
        changes["ts"] = ev.ts + shift
    cid = getattr(ev, "call_id", None)
    if rename and isinstance(cid, str) and cid:
        changes["call_id"] = PREFIX + cid
    return dataclasses.replace(ev, **changes) if changes else ev


class ReplayClock(Clock):
    """The console's clock during ``--replay``: "now" is the replay's time, so durations are the recorded ones."""

    def __init__(self, replay: Callable[[], Replay | None]) -> None:
        self._replay = replay

    def now(self) -> float:
        r = self._replay()
        return r.now() if r is not None else time.time()
