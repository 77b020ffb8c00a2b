"""What the store component writes, before it is written: the bounded, ordered buffer of stamped events and the
live calls' state as the events tell it.

Why apart from the component: this is the part with rules (entry ids that only rise, the engine's event counter,
the bound and the drops it costs, which events change a call's state) and no I/O, so it is tested on its own and
the component stays the lifecycle and the loops.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.events.bus import SkippedEvents, event_line
from engine.store.base import StoredEvent

if TYPE_CHECKING:
    from engine.events import Event


def entry_key(entry_id: str) -> tuple[int, int]:
    """``'1700000000123-4'`` → ``(1700000000123, 4)``: entry ids compare in this order (``ValueError`` if not one)."""
    ms, _, n = entry_id.partition("-")
    return int(ms), int(n or 0)


class EventFeed:
    """Stamps events with rising entry ids and the engine's counter and holds them, at most ``bound``, in order. An
    event that cannot be written (its JSON is not valid text) is skipped and counted by ``skipped``, unnumbered."""

    def __init__(self, bound: int, skipped: SkippedEvents | None = None) -> None:
        self.bound = bound
        self.skipped = skipped or SkippedEvents("event feed")
        self.pending: deque[StoredEvent] = deque()
        self.seq = 0
        self.dropped = 0
        self._last = (0, -1)

    def continue_after(self, entry_id: str | None) -> None:
        """Never stamp an id at or below ``entry_id`` (the newest entry of a restarted engine with a fixed id)."""
        if entry_id:
            self._last = max(self._last, entry_key(entry_id))

    def _next_id(self, ts: float) -> str:
        ms = int(ts * 1000)
        last_ms, last_n = self._last
        self._last = (ms, 0) if ms > last_ms else (last_ms, last_n + 1)
        return f"{self._last[0]}-{self._last[1]}"

    def add(self, events: Iterable[Event]) -> int:
        """Stamp and hold ``events``; returns how many older ones were dropped to stay within the bound."""
        dropped = 0
        for ev in events:
            try:
                line = event_line(ev)
            except (TypeError, ValueError, RecursionError) as e:
                self.skipped.skip(ev, e)
                continue
            self.seq += 1
            call_id = getattr(ev, "call_id", None)
            stored = StoredEvent(
                id=self._next_id(ev.ts),
                seq=self.seq,
                type=ev.type,
                call_id=call_id if isinstance(call_id, str) and call_id else None,
                event=line,
            )
            if len(self.pending) >= self.bound:
                self.pending.popleft()
                dropped += 1
            self.pending.append(stored)
        self.dropped += dropped
        return dropped

    def marker(self, type_: str, ts: float) -> StoredEvent:
        """An entry that is not an event (``engine.stopped``), numbered like one (the stream's ``seq`` stays
        without gaps)."""
        self.seq += 1
        return StoredEvent(
            id=self._next_id(ts), seq=self.seq, type=type_, call_id=None, event=json.dumps({"type": type_, "ts": ts})
        )

    def batch(self, size: int, after_seq: int = 0) -> list[StoredEvent]:
        """The oldest ``size`` pending events whose ``seq`` is above ``after_seq`` (the newest one sent and not
        answered yet; 0: from the oldest); still held until ``written``."""
        unsent = 0
        for ev in reversed(self.pending):  # the unsent ones are the newest: count back to the last one sent
            if ev.seq <= after_seq:
                break
            unsent += 1
        start = len(self.pending) - unsent
        return [self.pending[i] for i in range(start, start + min(size, unsent))]

    def written(self, batch: list[StoredEvent]) -> None:
        """``batch`` reached the store: let it go (unless the bound already pushed some of it out meanwhile)."""
        for ev in batch:
            if self.pending and self.pending[0] is ev:
                self.pending.popleft()


@dataclass(frozen=True, slots=True)
class LiveCall:
    """What only a live session knows, for its state hash."""

    call_id: str
    provider: str
    tools_shown: frozenset[str]
    turn: int


class CallStates:
    """Each call's state hash as the events describe it, which calls changed since the last write, and what was
    written (so a write sends only the fields that changed: most turns change one or two of a dozen)."""

    def __init__(self) -> None:
        self.calls: dict[str, dict[str, str]] = {}
        self.changed: set[str] = set()
        self.ended: set[str] = set()
        #: Each call's fields as last written to the store.
        self.written: dict[str, dict[str, str]] = {}

    def to_write(self, call_ids: Iterable[str], extra: dict[str, str], full: bool) -> dict[str, dict[str, str]]:
        """Per call, the fields to write (its state and ``extra``): every one when ``full`` (the store may have
        lost the hash: after a reconnect, and now and then) or never written, else those that differ from the
        last write (none: the write only keeps the hash from expiring)."""
        out: dict[str, dict[str, str]] = {}
        for call_id in call_ids:
            state = self.calls.get(call_id)
            if state is None:
                continue
            fields = {**state, **extra}
            before = None if full else self.written.get(call_id)
            out[call_id] = fields if before is None else {k: v for k, v in fields.items() if before.get(k) != v}
        return out

    def wrote(self, states: dict[str, dict[str, str]]) -> None:
        """``states`` (from ``to_write``) reached the store."""
        for call_id, fields in states.items():
            self.written.setdefault(call_id, {}).update(fields)

    def follow(self, events: Iterable[Event]) -> None:
        for ev in events:
            call_id = getattr(ev, "call_id", None)
            if not isinstance(call_id, str) or not call_id:
                continue
            if ev.type == "call.started":
                self.calls[call_id] = {
                    "call_id": call_id,
                    "context": str(getattr(ev, "context", "")),
                    "provider": str(getattr(ev, "provider", "")),
                    "tier": str(getattr(ev, "tier", "")),
                    "state": "active",
                    "started_at": f"{ev.ts:.3f}",
                }
            state = self.calls.get(call_id)
            if state is None:
                continue
            if ev.type == "tier.changed":
                state["tier"] = str(getattr(ev, "new", state.get("tier", "")))
            elif ev.type == "call.ended":
                state["state"] = "ended"
                state["ended_reason"] = str(getattr(ev, "reason", ""))
                state["ended_at"] = f"{ev.ts:.3f}"
                self.ended.add(call_id)
            self.changed.add(call_id)

    def live(self, call_id: str, provider: str, tools: Iterable[str], turn: int) -> None:
        """What only the live session knows (its provider after a switch, the tools shown for its current turn),
        marked changed when it differs from what was written."""
        state = self.calls.get(call_id)
        if state is None or call_id in self.ended:
            return
        now = {"provider": provider, "tools_shown": json.dumps(sorted(tools)), "turn": str(turn)}
        if any(state.get(k) != v for k, v in now.items()):
            state.update(now)
            self.changed.add(call_id)

    def forget(self, call_id: str) -> None:
        """An ended call's final state was written."""
        self.calls.pop(call_id, None)
        self.written.pop(call_id, None)
        self.ended.discard(call_id)
        self.changed.discard(call_id)
