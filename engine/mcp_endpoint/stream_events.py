"""The bounded, per-session event store behind resumable SSE streams of the engine's MCP endpoint (SEP-1699).

Why it exists: given an ``EventStore``, the SDK's streamable-HTTP transport gives every event of a POST or GET
stream an id, opens each stream with a priming event (carrying the ``retry:`` interval) and answers a GET with
``Last-Event-ID`` by replaying what came after that id. The SDK's example store keeps everything forever in one
namespace, while its stream ids are JSON-RPC request ids, so two sessions' request 1 would be one stream. This
store keeps each MCP session's streams apart (``resume.py`` tells it whose request is being served, through
``bind_owner``) and is bounded (``engine.mcp_server.resume``, read at every event, so a reload applies at once):

* per stream at most ``max_events_per_stream`` events and ``max_bytes_per_stream`` JSON bytes, oldest dropped;
* across streams ``max_events`` / ``max_bytes``, the least recently written streams dropped whole;
* a stream not written for ``ttl_s`` is forgotten.

Dropping only ever takes a stream's oldest events, so an event id still kept can be replayed past completely; an
id no longer kept cannot, and is refused (``problem``) rather than answered with a gap. An event larger than a
stream may hold is kept as a bare cursor (no payload) at the head of its stream: a client that got it can resume
after it, one that missed it cannot.
"""

from __future__ import annotations

import contextvars
import itertools
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage

from engine.config.models.engine import McpResumeConfig

#: Longest Last-Event-ID worth parsing: ids are decimal counters, far shorter.
MAX_ID_CHARS = 20


@dataclass(eq=False, slots=True)
class Owner:
    """One MCP session as the store knows it (created with the request that opens the session)."""

    serial: int
    inflight: int = 0
    seen: float = 0.0
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))  # per session: ids tell no traffic


@dataclass(slots=True)
class _Event:
    id: int
    message: JSONRPCMessage | None  # None: a priming event, or a cursor for one too large to keep
    size: int


@dataclass(eq=False, slots=True)
class _Stream:
    owner: int
    stream_id: StreamId
    touched: float
    events: deque[_Event] = field(default_factory=deque)
    size: int = 0


_owner: contextvars.ContextVar[Owner | None] = contextvars.ContextVar("mcp_endpoint_stream_owner", default=None)


def bind_owner(owner: Owner | None) -> contextvars.Token[Owner | None]:
    """Make events stored and replayed in this context (and tasks started from it) ``owner``'s."""
    return _owner.set(owner)


def unbind_owner(token: contextvars.Token[Owner | None]) -> None:
    _owner.reset(token)


def parse_event_id(raw: str) -> int | None:
    """The number of an event id this store issued, or None when ``raw`` cannot be one."""
    if not raw or len(raw) > MAX_ID_CHARS or not raw.isascii() or not raw.isdigit():
        return None
    return int(raw)


class StreamEvents(EventStore):
    """Events of every session's SSE streams, kept for replay within ``engine.mcp_server.resume``. One event loop."""

    def __init__(self, limits: Callable[[], McpResumeConfig], clock: Callable[[], float] = time.monotonic) -> None:
        self._limits = limits
        self._clock = clock
        self._unowned = itertools.count(1)
        self._streams: OrderedDict[tuple[int, StreamId], _Stream] = OrderedDict()  # least recently written first
        self._where: dict[tuple[int, int], _Stream] = {}  # (owner, event id) of every kept event -> its stream
        self._bytes = 0
        self.dropped_events = 0

    @property
    def kept_events(self) -> int:
        return len(self._where)

    @property
    def kept_bytes(self) -> int:
        return self._bytes

    @property
    def largest_stream(self) -> int:
        return max((len(s.events) for s in self._streams.values()), default=0)

    # ------------------------------------------------------------------------------------------ the SDK's interface

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        owner = _owner.get()
        if owner is None:  # not a session's request (resume.py did not bind one): nothing to resume from
            return str(next(self._unowned))
        event_id = next(owner.ids)
        cfg = self._limits()
        now = self._clock()
        self._expire(now, cfg.ttl_s)
        key = (owner.serial, stream_id)
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = _Stream(owner.serial, stream_id, now)
        else:
            self._streams.move_to_end(key)
            stream.touched = now
        size = 0 if message is None else len(message.model_dump_json(by_alias=True, exclude_unset=True))
        if size > cfg.max_bytes_per_stream:
            # nothing before it could be replayed past it: keep it as the stream's first event, without its payload
            self._drop_oldest(stream, len(stream.events))
            self.dropped_events += 1
            message, size = None, 0
        stream.events.append(_Event(event_id, message, size))
        stream.size += size
        self._bytes += size
        self._where[(owner.serial, event_id)] = stream
        while len(stream.events) > cfg.max_events_per_stream or stream.size > cfg.max_bytes_per_stream:
            self._drop_oldest(stream, 1)
        self._bound_total(cfg, stream)
        return str(event_id)

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        """Send the caller's session the events after ``last_event_id`` on its stream, once each, in order.

        Events written while a send waits are sent too, so the SDK's live tail starts right after the last one.
        """
        found = self._find(_owner.get(), last_event_id)
        if found is None:
            return None
        key = (found.owner, found.stream_id)
        after = int(last_event_id)
        while (stream := self._streams.get(key)) is not None:
            pending = [e for e in stream.events if e.id > after]
            if not pending:
                break
            for event in pending:
                after = event.id
                if event.message is not None:
                    await send_callback(EventMessage(event.message, str(event.id)))
        return found.stream_id

    # ------------------------------------------------------------------------------------------ for resume.py

    def problem(self, owner: Owner | None, raw: str) -> str | None:
        """Why ``raw`` (a Last-Event-ID) cannot be resumed from by ``owner``'s session, or None when it can.

        An id of another session reads exactly like one that expired: nothing tells a client another exists.
        """
        shown = raw if len(raw) <= MAX_ID_CHARS * 2 else raw[: MAX_ID_CHARS * 2] + "…"
        if parse_event_id(raw) is None:
            return (
                f"Last-Event-ID {shown!r} is not an event id of this endpoint (they are decimal numbers of at most "
                f"{MAX_ID_CHARS} digits); reconnect without it"
            )
        self._expire(self._clock(), self._limits().ttl_s)
        if self._find(owner, raw) is None:
            return (
                f"Last-Event-ID {shown} is not among this session's kept events (expired after "
                "engine.mcp_server.resume.ttl_s, dropped by its bounds, or never this session's): what came after "
                "it cannot be replayed; send the request again"
            )
        return None

    def forget(self, owner: Owner) -> None:
        """Drop every stream of a session that ended."""
        for key in [k for k in self._streams if k[0] == owner.serial]:
            self._drop_stream(self._streams[key])

    # ------------------------------------------------------------------------------------------ bounds

    def _find(self, owner: Owner | None, raw: str) -> _Stream | None:
        number = parse_event_id(raw)
        if owner is None or number is None:
            return None
        return self._where.get((owner.serial, number))

    def _expire(self, now: float, ttl_s: float) -> None:
        while self._streams:
            oldest = next(iter(self._streams.values()))
            if now - oldest.touched < ttl_s:
                break
            self._drop_stream(oldest)

    def _bound_total(self, cfg: McpResumeConfig, current: _Stream) -> None:
        while len(self._where) > cfg.max_events or self._bytes > cfg.max_bytes:
            oldest = next(iter(self._streams.values()))
            if oldest is current:  # the only stream left is over the total (a reload shrank it): trim its head
                self._drop_oldest(current, 1)
            else:
                self._drop_stream(oldest)

    def _drop_oldest(self, stream: _Stream, count: int) -> None:
        for _ in range(min(count, len(stream.events))):
            event = stream.events.popleft()
            stream.size -= event.size
            self._bytes -= event.size
            del self._where[(stream.owner, event.id)]
            self.dropped_events += 1

    def _drop_stream(self, stream: _Stream) -> None:
        self._drop_oldest(stream, len(stream.events))
        self._streams.pop((stream.owner, stream.stream_id), None)


__all__ = ["Owner", "StreamEvents", "bind_owner", "parse_event_id", "unbind_owner"]
