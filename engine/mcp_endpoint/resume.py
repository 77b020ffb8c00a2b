"""Which MCP session each request of the endpoint serves, so resumed streams stay within their session (SEP-1699).

Why it exists: the SDK hands every session's transport one event store and calls it without saying whose events
they are. This wrapper sits between the endpoint's guard (Host/Origin, token: always first) and the SDK's session
manager and binds each request to its session's ``Owner`` (``stream_events.bind_owner``), so the store files and
replays events per session:

* a request without ``Mcp-Session-Id`` (one that may open a session) gets a new owner; the session's own task,
  which the SDK starts from that request, inherits it, and the id the response names is remembered for it;
* a request naming a session gets that session's owner;
* a GET with ``Last-Event-ID`` is checked before the SDK sees it: an id that is not this session's kept event
  (expired, dropped, another session's, or not an event id at all) is a 400 saying so, never a replay of someone
  else's events, an empty stream or a 500; with resuming off, any Last-Event-ID is refused the same way;
* a session that ended (DELETE, or an id the SDK no longer knows) is forgotten with its events, and one idle
  longer than the SDK's own session idle timeout is too (the SDK has ended it by then).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.responses import JSONResponse

from engine.mcp_endpoint.stream_events import Owner, StreamEvents, bind_owner, unbind_owner

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

SESSION_HEADER = b"mcp-session-id"
LAST_EVENT_HEADER = b"last-event-id"
INVALID_REQUEST = -32600


class SessionOwners:
    """Session id → owner for the endpoint's requests; bounded by the SDK's own session count and idle timeout."""

    def __init__(
        self,
        store: Callable[[], StreamEvents | None],
        idle_s: float,
        max_sessions: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._idle_s = idle_s
        self._max = max_sessions
        self._clock = clock
        self._owners: OrderedDict[str, Owner] = OrderedDict()  # least recently seen first
        self._serial = 0

    def __len__(self) -> int:
        return len(self._owners)

    async def serve(self, scope: MutableMapping[str, Any], receive: Receive, send: Send, app: Asgi) -> None:
        self._sweep()
        session = header(scope, SESSION_HEADER)
        owner = self._owners.get(session) if session is not None else self._new_owner()
        last_event_id = header(scope, LAST_EVENT_HEADER)
        # a session this map does not know is the SDK's to answer (404 when it has ended too)
        if scope.get("method") == "GET" and session is not None and last_event_id and owner is not None:
            refusal = self._refusal(owner, last_event_id)
            if refusal is not None:
                body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": refusal}}
                await JSONResponse(body, 400)(scope, receive, send)
                return
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                named = header(message, SESSION_HEADER)
                if session is None and named is not None and owner is not None and status < 400:
                    self._owners[named] = owner
            await send(message)

        token = bind_owner(owner)
        if owner is not None:
            owner.inflight += 1
        try:
            await app(scope, receive, watch)
        finally:
            unbind_owner(token)
            if owner is not None:
                owner.inflight -= 1
                owner.seen = self._clock()
            if session is not None:
                if status == 404 or (scope.get("method") == "DELETE" and 200 <= status < 300):
                    self._forget(session)
                elif session in self._owners:
                    self._owners.move_to_end(session)

    def _new_owner(self) -> Owner:
        self._serial += 1
        return Owner(self._serial, seen=self._clock())

    def _refusal(self, owner: Owner, last_event_id: str) -> str | None:
        store = self._store()
        if store is None:
            return (
                "Last-Event-ID cannot be resumed from: this endpoint keeps no events "
                "(engine.mcp_server.resume.enabled is false); send the request again"
            )
        return store.problem(owner, last_event_id)

    def _forget(self, session: str) -> None:
        owner = self._owners.pop(session, None)
        store = self._store()
        if owner is not None and store is not None:
            store.forget(owner)

    def _sweep(self) -> None:
        """Forget sessions the SDK has ended for idleness (no request in flight for longer than its timeout)."""
        now = self._clock()
        for _ in range(len(self._owners)):
            session, owner = next(iter(self._owners.items()))
            if owner.inflight > 0:
                self._owners.move_to_end(session)
            elif now - owner.seen > self._idle_s or len(self._owners) > self._max:
                self._forget(session)
            else:
                break


def header(message: MutableMapping[str, Any], name: bytes) -> str | None:
    for k, v in message.get("headers", ()):
        if bytes(k).lower() == name:
            return bytes(v).decode("latin-1")
    return None


__all__ = ["SessionOwners", "header"]
