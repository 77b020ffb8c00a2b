"""One engine watched and driven from elsewhere over its HTTP API: the live event stream, the heartbeat, commands.

Why it exists: ``ava-console --attach http://host:port`` follows one remote engine without Redis
(``engine.remote.http_client``). This component adds the routes that client uses:

* ``GET /events`` — a WebSocket. First message ``{"heartbeat": {...}}`` (engine id, host, version, contexts,
  capacity, live calls, draining: the Redis heartbeat's facts), then ``{"gap": {...}}`` if history after
  ``?after=<entry id>`` is missing, then the retained events after that entry (all retained ones without it), then
  live events, one JSON object per message: ``{"entry_id", "seq", "event"}``; a heartbeat again every
  ``engine.heartbeat_s``. When the engine starts listening (the first client) the retained events begin with a
  ``call.started`` for each call already live (its start time, current tier), so a console attaching mid-call
  sees it. A client more than ``LAG_BOUND`` events behind is closed with 1013 and a reason (it
  resumes with ``?after=``); the engine stopping closes every stream with 1001 ``engine stopping``, a changed
  ``engine.http.auth_token`` (reload) with 1008.
  With ``?approver=NAME`` the client is a console that answers tool approvals: while its stream is open (and
  ``APPROVER_GRACE_HEARTBEATS`` heartbeats after, for a reconnect) calls that need approval wait for it, as for the
  console in the engine's own process; it answers with ``POST /control/approve_tool`` / ``deny_tool``.
* ``GET /engine`` — the heartbeat as JSON.
* ``POST /control/{command}`` — the JSON body is the command's arguments (``engine.remote.base.COMMANDS``); the
  answer is the dispatcher's (``engine.operator.control``) JSON object; a refusal is ``{"error": ...}`` with 400 (bad
  arguments or body), 404 (no such command, call or approval), 409 (the engine could not do it) or 501 (a command
  this engine lacks).

Both need an authenticated request: ``engine.http.auth_token`` set and sent (403 naming the key otherwise; 401 from
the guard for a wrong token), on top of the guard's Host and Origin checks every route has. The events are the
bus's (redacted before any subscriber sees them). The bus subscription exists only while a client is connected,
and for ``RETAIN_HEARTBEATS`` heartbeats after the last one left (so a dropped client resumes without a gap);
with nobody listening it costs nothing per event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from aiohttp import WSCloseCode, web

from engine.events.bus import SkippedEvents
from engine.http.backend import AUTHENTICATED
from engine.http.body import BodyError, read_json
from engine.http.event_stream import GOING_AWAY, POLICY_VIOLATION, EventRing, Listener, message
from engine.http.responses import error, json_response
from engine.operator.control import CommandError
from engine.remote.base import APPROVER_NAME
from engine.services import Component, Services
from engine.store.feed import entry_key

if TYPE_CHECKING:
    from engine.config.models import Settings
    from engine.events import Event
    from engine.events.bus import Subscription

log = logging.getLogger(__name__)
T = TypeVar("T")
#: A console that answers approvals stays their approver this many heartbeats after its stream closed (a reconnect).
APPROVER_GRACE_HEARTBEATS = 3
#: Runs one operator command by name with its JSON arguments (``engine.operator.control.CommandDispatcher.run``).
Dispatch = Callable[[str, Any], Awaitable[dict[str, Any]]]
#: A refused command's HTTP status, by the dispatcher's kind of error.
STATUS = {"bad_request": 400, "not_found": 404, "failed": 409, "unsupported": 501}

#: Events retained for clients that resume, and how far behind a client may fall before it is dropped.
RING_BOUND = 10_000
LAG_BOUND = 8_000
#: The subscription (and the ring) outlive the last client by this many heartbeats.
RETAIN_HEARTBEATS = 30
#: Events handed to the socket before the sender looks at the clock (for the heartbeat) again.
SEND_BATCH = 200
#: How long closing a socket may take (a client that reads nothing cannot take the close frame): then it is cut.
CLOSE_WAIT_S = 5.0
#: WebSocket pings this often; a client that answers none within half of it is gone (a peer that vanished without
#: closing its connection would otherwise hold a listener until the kernel gives up on it, many minutes later).
PING_S = 20.0
#: Stopping waits this long for the streams to close.
STOP_WAIT_S = 2.0

NEEDS_TOKEN = (
    "reading the engine's events and sending it commands needs an authenticated request: set "
    "engine.http.auth_token and send 'Authorization: Bearer <token>'"
)


class HttpRemote(Component):
    """An engine component: the event stream, the heartbeat and (with a dispatcher) the command route."""

    name = "remote_http"

    def __init__(
        self,
        services: Services,
        facts: Callable[[], Mapping[str, Any]],
        redact: Callable[[T], T],
        engine_id: Callable[[], str],
        dispatch: Dispatch,
        *,
        snapshot: Callable[[], Iterable[Event]] = tuple,
        attach_approver: Callable[[str], Callable[[], None]] | None = None,
        ring_bound: int = RING_BOUND,
        lag_bound: int = LAG_BOUND,
    ) -> None:
        super().__init__(services)
        self._facts = facts
        self._redact: Callable[[Any], Any] = redact
        self._engine_id = engine_id
        self._dispatch = dispatch
        self._snapshot = snapshot
        self._attach_approver = attach_approver
        #: Consoles on the stream that answer approvals (``?approver=NAME``): their detach and open streams.
        self.approvers: dict[str, tuple[Callable[[], None], int]] = {}
        self._approver_timers: dict[str, asyncio.TimerHandle] = {}
        #: An event the stream cannot send is counted in ai_agent_events_skipped_total{consumer="event stream"}.
        self.ring = EventRing(ring_bound, lag_bound, SkippedEvents("event stream", self.metrics.count_skipped))
        self._sub: Subscription | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._handlers: set[asyncio.Task[Any]] = set()
        self._started_at = 0.0
        self.stopping = False
        self.ping_s = PING_S

    # ------------------------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        self._started_at = time.time()
        self.stopping = False

    async def stop(self) -> None:
        self.stopping = True
        for listener in list(self.ring.listeners):
            listener.drop(GOING_AWAY, "engine stopping")
        if self._handlers:
            await asyncio.wait(set(self._handlers), timeout=STOP_WAIT_S)
        self._unsubscribe()
        for name in list(self.approvers):
            self._approver_gone(name)

    async def reload(self, old: Settings, new: Settings) -> None:
        """A new (or no) token ends the streams opened with the old one; they reconnect with theirs, or are refused.
        Everything else (the heartbeat interval, the body limit) is read when used."""
        if old.engine.http.auth_token != new.engine.http.auth_token:
            for listener in list(self.ring.listeners):
                listener.drop(POLICY_VIOLATION, "the engine's bearer token changed (engine.http.auth_token)")

    # ------------------------------------------------------------------------------------------- heartbeat

    def heartbeat(self) -> dict[str, Any]:
        """This engine as a remote console sees it: the Redis heartbeat's facts plus the stream's own counts."""
        cfg = self._settings().engine
        info = {
            "id": self._engine_id(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_at": self._started_at,
            "heartbeat_s": cfg.heartbeat_s,
            **self._facts(),
            "stream": {
                "listeners": len(self.ring.listeners),
                "retained": len(self.ring.feed.pending),
                "lost": self.ring.lost,
                "clients_dropped": self.ring.clients_dropped,
            },
        }
        return dict(self._redact(info))

    # ------------------------------------------------------------------------------------------- the subscription

    def _subscribe(self) -> None:
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        if self._sub is not None:
            return
        from engine.recorder.codec import event_classes
        from engine.recorder.writer import SKIPPED_TYPES  # the audio level meter: many per second, no history

        self.ring.restart()
        # the live calls first (nothing is awaited between this and the subscription: no event falls in between)
        self.ring.add(self._snapshot())
        sub = self._sub = self.bus.subscribe(maxsize=self.ring.feed.bound, types=set(event_classes()) - SKIPPED_TYPES)
        self._pump_task = self._spawn(self._pump(sub), name="remote_http:events")

    def _unsubscribe(self) -> None:
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        if self._sub is not None:
            self._sub.close()  # the pump takes what is left and ends
            self._sub = None
        self.ring.feed.pending.clear()

    def _left(self) -> None:
        """A client left: with nobody left, keep retaining for a while (resumes), then stop listening."""
        if self.ring.listeners or self._sub is None or self.stopping:
            return
        retain_s = self._settings().engine.heartbeat_s * RETAIN_HEARTBEATS
        if self._linger is not None:
            self._linger.cancel()
        self._linger = asyncio.get_running_loop().call_later(retain_s, self._unsubscribe)

    # ------------------------------------------------------------------------------------------- approvers

    def _approver_joined(self, name: str) -> None:
        """A console that answers approvals opened a stream: calls needing approval wait for it."""
        timer = self._approver_timers.pop(name, None)
        if timer is not None:
            timer.cancel()
        detach, streams = self.approvers.get(name, (None, 0))
        if detach is None:
            assert self._attach_approver is not None
            detach = self._attach_approver(f"{name} (attached over HTTP)")
            log.info("approvals: %s (attached over HTTP) answers them", name)
        self.approvers[name] = (detach, streams + 1)

    def _approver_left(self, name: str) -> None:
        """Its stream closed: it stays the approver for ``APPROVER_GRACE_HEARTBEATS`` (a reconnect), then goes."""
        detach, streams = self.approvers[name]
        self.approvers[name] = (detach, streams - 1)
        if streams - 1 <= 0 and not self.stopping:
            grace = self._settings().engine.heartbeat_s * APPROVER_GRACE_HEARTBEATS
            self._approver_timers[name] = asyncio.get_running_loop().call_later(grace, self._approver_gone, name)
        elif streams - 1 <= 0:
            self._approver_gone(name)

    def _approver_gone(self, name: str) -> None:
        timer = self._approver_timers.pop(name, None)
        if timer is not None:
            timer.cancel()
        found = self.approvers.pop(name, None)
        if found is not None:
            found[0]()  # what still waits with no approver left is denied
            log.info("approvals: %s (attached over HTTP) left", name)

    async def _pump(self, sub: Subscription) -> None:
        seen_drops = 0
        while True:
            try:
                first = await sub.get()
            except StopAsyncIteration:
                return
            if sub is not self._sub:  # let go of while this pump waited: what it still held belongs to no ring
                return
            self.ring.add([first, *sub.drain()])
            if sub.dropped > seen_drops:  # a burst larger than the subscription's bound before we took it
                self.ring.lost += sub.dropped - seen_drops
                log.warning(
                    "event stream: %d event(s) lost in a burst (bound %d)",
                    sub.dropped - seen_drops,
                    self.ring.feed.bound,
                )
                seen_drops = sub.dropped

    # ------------------------------------------------------------------------------------------- routes

    def install_routes(self, app: web.Application) -> None:
        app.router.add_get("/events", self.events)
        app.router.add_get("/engine", self.show)
        app.router.add_post("/control/{command}", self.control)

    async def control(self, request: web.Request) -> web.Response:
        if not request.get(AUTHENTICATED, False):
            return error(403, NEEDS_TOKEN, key="engine.http.auth_token")
        try:
            args = await read_json(request, self._settings().engine.http.max_body_bytes)
        except BodyError as e:
            return error(e.status, e.message, key=e.key)
        try:
            answer = await self._dispatch(request.match_info["command"], args)
        except CommandError as e:
            return error(STATUS.get(e.kind, 400), str(e))
        return json_response(answer)

    async def show(self, request: web.Request) -> web.Response:
        if not request.get(AUTHENTICATED, False):
            return error(403, NEEDS_TOKEN, key="engine.http.auth_token")
        return json_response(self.heartbeat())

    async def events(self, request: web.Request) -> web.StreamResponse:
        if not request.get(AUTHENTICATED, False):
            return error(403, NEEDS_TOKEN, key="engine.http.auth_token")
        after = request.query.get("after")
        if after is not None:
            try:
                entry_key(after)
            except ValueError:
                return error(
                    400,
                    f"?after= must be an entry id like 1764300000000-0 (from a message's entry_id), not {after[:40]!r}",
                )
        approver_name = request.query.get("approver", "").strip()
        if approver_name and not APPROVER_NAME.fullmatch(approver_name):
            return error(
                400, "?approver= names the console answering approvals: 1-80 letters, digits, '.', '_', '-', '@' or ':'"
            )
        if self.stopping:
            return error(503, "the engine is stopping")
        ws = web.WebSocketResponse(compress=False, max_msg_size=64 * 1024, timeout=CLOSE_WAIT_S, heartbeat=self.ping_s)
        if not ws.can_prepare(request).ok:
            return error(400, "GET /events is a WebSocket: connect with a WebSocket client (Upgrade: websocket)")
        await ws.prepare(request)
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        self._subscribe()
        approver = approver_name if self._attach_approver is not None else None
        if approver:
            self._approver_joined(approver)
        listener, _backlog, gap = self.ring.join(after)
        try:
            await self._serve(ws, listener, gap.to_dict() if gap is not None else None)
        finally:
            self.ring.leave(listener)
            self._left()
            if approver:
                self._approver_left(approver)
            if task is not None:
                self._handlers.discard(task)
        code, reason = listener.close_code or WSCloseCode.OK, listener.close_reason
        with contextlib.suppress(Exception):
            try:
                async with asyncio.timeout(CLOSE_WAIT_S):
                    await ws.close(code=code, message=reason.encode()[:120])
            except TimeoutError:  # the client reads nothing, so not the close frame either: cut the connection
                if request.transport is not None:
                    request.transport.abort()
        return ws

    async def _serve(self, ws: web.WebSocketResponse, listener: Listener, gap: dict[str, Any] | None) -> None:
        """Send until the client leaves, its socket fails, or it is dropped (``listener.gone``)."""
        sender = asyncio.create_task(self._send(ws, listener, gap), name="remote_http:send")
        reader = asyncio.create_task(self._read(ws), name="remote_http:read")
        gone = asyncio.create_task(listener.gone.wait(), name="remote_http:gone")
        tasks = {sender, reader, gone}
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if sender.done() and not sender.cancelled() and sender.exception() is not None:
            log.info("event stream: a client's socket failed: %s", sender.exception())

    async def _read(self, ws: web.WebSocketResponse) -> None:
        async for _msg in ws:  # clients send nothing but control frames; this ends when they close
            pass

    async def _send(self, ws: web.WebSocketResponse, listener: Listener, gap: dict[str, Any] | None) -> None:
        await ws.send_str(json.dumps({"heartbeat": self.heartbeat()}, default=str))
        if gap is not None:
            await ws.send_str(json.dumps({"gap": gap}))
        beat_at = time.monotonic() + self._settings().engine.heartbeat_s
        while not listener.gone.is_set():
            listener.wake.clear()
            batch = self.ring.after(listener, SEND_BATCH)
            for ev in batch:
                await ws.send_str(message(ev))
                listener.sent_seq = ev.seq
            now = time.monotonic()
            if now >= beat_at:
                await ws.send_str(json.dumps({"heartbeat": self.heartbeat()}, default=str))
                beat_at = now + self._settings().engine.heartbeat_s
            if batch:
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, beat_at - time.monotonic())):
                    await listener.wake.wait()
