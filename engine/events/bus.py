"""The event bus: every subscriber has its own bounded queue, so a slow reader never slows a call down.

Why apart from ``engine.events``: that module is the list of events (what the world is told); this is how they
travel. ``EventBus.publish`` never blocks: a full subscriber queue drops its oldest event and counts the drop.
``engine.events`` re-exports both names (the public API names them there).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from engine.bounds.json_text import InvalidText, require_valid

if TYPE_CHECKING:
    from engine.events.catalog import Event

_E = TypeVar("_E")

log = logging.getLogger(__name__)


class EventRedactor(Protocol):
    """Masks known secrets in an event (``engine.redaction.redactor.Redactor``); ``active`` is False while there is
    none, so the bus passes events on without a call."""

    active: bool

    def event(self, event: _E) -> _E: ...


class Subscription:
    """One subscriber's bounded queue; iterate it with ``async for``."""

    def __init__(self, bus: EventBus, maxsize: int, types: frozenset[str] | None) -> None:
        self._bus = bus
        self._items: deque[Event] = deque(maxlen=maxsize)
        self._maxsize = maxsize
        self._ready = asyncio.Event()
        self._types = types
        self.dropped = 0
        self.closed = False

    def get_nowait(self) -> Event | None:
        if self._items:
            return self._items.popleft()
        return None

    def drain(self) -> list[Event]:
        out = list(self._items)
        self._items.clear()
        return out

    async def get(self) -> Event:
        while not self._items:
            if self.closed:
                raise StopAsyncIteration
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()

    def close(self) -> None:
        self.closed = True
        self._bus._unsubscribe(self)
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        return await self.get()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Tap(deque["Event"]):
    """A tap's stand-in for its subscription's queue (``EventBus.tap``): ``publish`` appends each event to the queue
    and reads its length, so ``append`` here is the tap's own function (an instance attribute: the publish loop stays
    as it is, and costs the other subscribers nothing); the one placeholder inside keeps the length at 1, so the
    subscription's ready event (nobody waits on it) is not set per event."""

    def __init__(self, record: Callable[[Event], None]) -> None:
        super().__init__(cast("tuple[Event]", (None,)))  # never read: only counted
        self.__dict__["append"] = record


class EventBus:
    """Fan-out of events to subscribers; publishing is synchronous and never blocks."""

    def __init__(self, queue_size: int = 1000, *, redactor: EventRedactor | None = None) -> None:
        self.queue_size = queue_size
        #: Masks known secrets in every event before any subscriber sees it (``Redactor``).
        self.redactor = redactor
        self._subs: tuple[Subscription, ...] = ()
        #: Event types some subscriber filters for; None when a subscriber takes every type. Read it (``wants``
        #: or, on a hot path, directly); the bus alone sets it.
        self.wanted: frozenset[str] | None = frozenset()
        self.dropped_total = 0
        self.published_total = 0

    def subscribe(self, maxsize: int | None = None, types: set[str] | None = None) -> Subscription:
        sub = Subscription(self, maxsize or self.queue_size, frozenset(types) if types else None)
        self._subs = (*self._subs, sub)
        self._rewant()
        return sub

    def tap(self, record: Callable[[Event], None], types: set[str]) -> Subscription:
        """A subscriber that takes each event of these types as it is published instead of queueing it: ``record``
        runs inside ``publish``, so it must be quick and never raise. For tracing, which keeps a few fields of each
        event: a queued event would live until the next batch, long enough to reach the GC's oldest generation and
        make full collections run. ``close`` the returned subscription to stop; ``get`` and ``drain`` are not for it.
        """
        sub = Subscription(self, 2, frozenset(types))  # a size the tap's length (1) never reaches: nothing dropped
        sub._items = _Tap(record)
        self._subs = (*self._subs, sub)
        self._rewant()
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs = tuple(s for s in self._subs if s is not sub)
            self._rewant()

    def _rewant(self) -> None:
        wanted: set[str] = set()
        for s in self._subs:
            if s._types is None:
                self.wanted = None
                return
            wanted |= s._types
        self.wanted = frozenset(wanted)

    def wants(self, event_type: str) -> bool:
        """Whether any subscriber would receive an event of this dotted type: publishers on a hot path build an
        event only when someone listens (``published_total`` then counts only the events that were built)."""
        wanted = self.wanted
        return wanted is None or event_type in wanted

    def publish(self, event: Event) -> None:
        self.published_total += 1
        redactor = self.redactor
        if redactor is not None and redactor.active:
            event = redactor.event(event)
        # Offered to each subscriber inline (no method call per subscriber): this runs twice for every tool call.
        for sub in self._subs:  # a tuple, replaced on (un)subscribe: a subscriber may leave while we iterate
            types = sub._types
            if types is not None and event.type not in types:
                continue
            items = sub._items
            n = len(items)
            if n == sub._maxsize:
                sub.dropped += 1
                self.dropped_total += 1
            items.append(event)
            if not n:  # a non-empty queue's event is already set: only ``get`` clears it, and only when empty
                sub._ready.set()

    @property
    def subscriber_count(self) -> int:
        return len(self._subs)


def event_line(ev: Event, dumps: Callable[[Event], str] | None = None) -> str:
    """The event as one JSON text that every UTF-8 writer takes (``dumps``: a consumer's own encoder, else
    ``to_json``); ``InvalidText``, ``TypeError`` or ``ValueError`` when it has none: ``SkippedEvents`` counts it."""
    return require_valid(dumps(ev) if dumps is not None else ev.to_json())


def skip_reason(error: BaseException) -> str:
    """The metric's reason label for why an event could not be written."""
    return "invalid_text" if isinstance(error, InvalidText | UnicodeError) else "not_serialisable"


class SkippedEvents:
    """What one consumer of the bus (the store, the recorder, the CLI's printer…) does with an event it cannot write:
    count it (``count``: ``Metrics.count_skipped``), log the first one of each reason, and go on —
    one bad event never stops the task that writes the others. Safe to call from a writer thread."""

    def __init__(self, consumer: str, count: Callable[[str, str], None] | None = None) -> None:
        self.consumer = consumer
        self._count = count
        self.skipped = 0
        self._logged: set[str] = set()

    def skip(self, ev: object, error: BaseException) -> None:
        reason = skip_reason(error)
        self.skipped += 1
        if self._count is not None:
            self._count(self.consumer, reason)
        if reason not in self._logged:
            self._logged.add(reason)
            log.warning(
                "%s: skipped a %s event it cannot write (%s: %s); counted in ai_agent_events_skipped_total, "
                "logged once per reason, the others go on",
                self.consumer,
                getattr(ev, "type", type(ev).__name__),
                type(error).__name__,
                error,
            )
