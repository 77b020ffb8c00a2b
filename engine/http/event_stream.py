"""The live event stream's memory: a bounded ring of stamped events, and each connected client's place in it.

Why apart from the WebSocket route (``engine.http.remote``): this is the part with rules and no I/O — entry ids
that only rise (``engine.store.feed.EventFeed`` stamps them, the same ``ms-n`` scheme as the Redis streams), the
bound, where history is missing (``floor``), and when a client is too far behind to keep. A client is a cursor into
the shared ring (the ``seq`` of the last event it was handed), not a copy of the events: fanning an event out costs
one wake-up per client, and a client that falls ``lag_bound`` events behind is dropped (it reconnects and resumes
after its last entry id), so a slow reader never holds more than its cursor and never slows the engine.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.events.bus import SkippedEvents
from engine.store.base import StoredEvent
from engine.store.feed import EventFeed, entry_key

if TYPE_CHECKING:
    from engine.events import Event

#: WebSocket close codes the stream uses (RFC 6455): the engine stops; the token changed; a client too slow to keep.
GOING_AWAY = 1001
POLICY_VIOLATION = 1008
TRY_AGAIN_LATER = 1013


@dataclass(frozen=True, slots=True)
class Gap:
    """Events after ``after`` that the ring no longer holds (or never held: nobody listened, the engine restarted)."""

    after: str
    retained_from: str | None
    reason: str

    def to_dict(self) -> dict[str, str | None]:
        return {"after": self.after, "retained_from": self.retained_from, "reason": self.reason}


@dataclass(eq=False, slots=True)
class Listener:
    """One connected client: the ``seq`` of the last event it was handed, and why it was dropped (if it was)."""

    sent_seq: int
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    close_code: int = 0
    close_reason: str = ""

    def drop(self, code: int, reason: str) -> None:
        if not self.gone.is_set():
            self.close_code, self.close_reason = code, reason
            self.gone.set()
            self.wake.set()


def message(ev: StoredEvent) -> str:
    """One stream message: ``{"entry_id", "seq", "event"}`` (the event's JSON is already redacted and encoded)."""
    return f'{{"entry_id":"{ev.id}","seq":{ev.seq},"event":{ev.event}}}'


class EventRing:
    """The retained events, oldest first (at most ``bound``), and the clients reading them."""

    def __init__(self, bound: int, lag_bound: int, skipped: SkippedEvents | None = None) -> None:
        if lag_bound >= bound:
            raise ValueError(f"a client's lag bound ({lag_bound}) must be below the ring's bound ({bound})")
        #: An event that cannot be sent (not valid text) is skipped and counted there; the stream goes on.
        self.feed = EventFeed(bound, skipped or SkippedEvents("event stream"))
        self.lag_bound = lag_bound
        self.listeners: set[Listener] = set()
        #: Events after this entry id are all retained (older ones were evicted, or came before anyone listened).
        self.floor = (0, 0)
        #: Events lost before they reached the ring (a burst over the bus subscription's bound).
        self.lost = 0
        self.clients_dropped = 0

    @property
    def events(self) -> list[StoredEvent]:
        return list(self.feed.pending)

    @property
    def head_seq(self) -> int:
        return self.feed.seq

    def restart(self, now: float | None = None) -> None:
        """Start retaining again after nobody listened: what happened before ``now`` is history this ring lacks."""
        self.feed.pending.clear()
        ms = int((time.time() if now is None else now) * 1000)
        floor = f"{ms}-0"
        self.feed.continue_after(floor)
        self.floor = max(self.floor, entry_key(floor))

    def add(self, events: Iterable[Event]) -> None:
        """Stamp and retain ``events``; wake every client, and drop those now more than ``lag_bound`` behind."""
        pending, bound = self.feed.pending, self.feed.bound
        for ev in events:
            if len(pending) >= bound:  # the oldest goes: a client that had not seen it has a gap
                self.floor = max(self.floor, entry_key(pending[0].id))
            self.feed.add((ev,))
        head = self.feed.seq
        for client in self.listeners:
            if client.gone.is_set():
                continue
            if head - client.sent_seq > self.lag_bound:
                self.clients_dropped += 1
                client.drop(
                    TRY_AGAIN_LATER,
                    f"too slow: more than {self.lag_bound} events behind; reconnect with ?after=<last entry_id>",
                )
            else:
                client.wake.set()

    def join(self, after: str | None) -> tuple[Listener, list[StoredEvent], Gap | None]:
        """A new client: its listener, the retained events after ``after`` (all of them without it) and the gap
        between ``after`` and what is retained, if any. ``ValueError`` when ``after`` is not an entry id."""
        retained = self.events
        backlog = retained
        gap: Gap | None = None
        if after is not None:
            key = entry_key(after)
            backlog = [ev for ev in retained if entry_key(ev.id) > key]
            if key < self.floor:
                oldest = retained[0].id if retained else None
                gap = Gap(
                    after,
                    oldest,
                    "events after this entry are no longer retained (the ring's bound, nobody listening for a "
                    "while, or an engine restart): some were missed",
                )
        start = backlog[0].seq - 1 if backlog else self.feed.seq
        listener = Listener(sent_seq=start)
        self.listeners.add(listener)
        return listener, backlog, gap

    def leave(self, listener: Listener) -> None:
        self.listeners.discard(listener)

    def after(self, listener: Listener, limit: int) -> list[StoredEvent]:
        """Up to ``limit`` retained events after the listener's cursor (the caller advances it as it sends)."""
        pending = self.feed.pending
        if not pending:
            return []
        first = listener.sent_seq + 1 - pending[0].seq
        if first < 0:  # evicted under the cursor: only possible past the lag bound, which drops the client first
            listener.drop(TRY_AGAIN_LATER, "fell out of the retained events; reconnect with ?after=<last entry_id>")
            return []
        return [pending[i] for i in range(first, min(len(pending), first + limit))]
