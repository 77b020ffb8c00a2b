"""What the endpoint's clients hear between requests: log messages at their level, and resource updates.

Why it exists: the servers behind the engine log (``notifications/message``) and announce changed resources
(``notifications/resources/updated``); the endpoint's clients should hear both, as they would talking to the
server directly, and the engine's own MCP warnings (a server that crashed, a listing that failed) too.

* ``logging/setLevel`` sets a session's level (``info`` until it does). A server's log message goes to every
  endpoint call running one of that server's tools, on that call's stream (2026-07-28 clients get it only when
  the call asked with ``_meta`` ``logLevel``: the SDK drops it otherwise), and to the sessions that set a level,
  on their standalone stream; the engine's warnings (``engine.mcp*`` loggers) go to those sessions too. The
  logger name says which server spoke (``{server}/{logger}``); only messages at or above the level pass.
* ``resources/subscribe`` is passed on to the server (once per URI, however many sessions and 2026
  ``subscriptions/listen`` streams watch it) and its updates relayed to the sessions and streams that asked;
  the last ``resources/unsubscribe`` (or the end of the last stream) is passed on too.
* A shared server's ``prompts`` and ``resources`` ``list_changed`` reach every session and the listen streams
  that asked for them (``list_changed``; what changes the endpoint's own tool list is ``changes.ToolWatch``'s).

Sessions are known by their ``Mcp-Session-Id`` (handshake era; the 2026 era has neither method), every one
that sent a request (``seen``), at most ``MAX_SESSIONS`` of them (the oldest forgotten first); one that cannot be
reached any more is forgotten. Notices go through each session's ``changes.Outbox``, never awaited here.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_args

from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    LoggingLevel,
    LoggingMessageNotification,
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    ServerNotification,
)

from engine.mcp_endpoint.changes import EVENTS, Kind, Notice, Outbox

log = logging.getLogger(__name__)
T = TypeVar("T")

LEVELS: tuple[LoggingLevel, ...] = get_args(LoggingLevel)
DEFAULT_LEVEL: LoggingLevel = "info"
MAX_SESSIONS = 1000
#: The engine's loggers whose warnings reach the clients that set a level.
ENGINE_LOGGERS = ("engine.mcp", "engine.mcp_endpoint")
_PY_LEVELS: dict[int, LoggingLevel] = {logging.CRITICAL: "critical", logging.ERROR: "error", logging.WARNING: "warning"}


def quiet(method: Callable[..., Awaitable[T]], *args: Any, **kw: Any) -> Awaitable[T]:
    """Call one of the SDK's methods deprecated by 2026-07-28 (logging, resources/subscribe) that the 2025 era still
    speaks, without its warning (the warning fires on the call; the awaiting happens outside the filter)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return method(*args, **kw)


def at_least(level: LoggingLevel, floor: LoggingLevel) -> bool:
    return LEVELS.index(level) >= LEVELS.index(floor)


def session_key(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request = ctx.request
    headers = getattr(request, "headers", None)
    return headers.get("mcp-session-id") if headers is not None else None


@dataclass
class _Session:
    session: ServerSession
    outbox: Outbox
    level: LoggingLevel = DEFAULT_LEVEL
    level_set: bool = False
    #: Exposed URI -> (server, the server's URI).
    watching: dict[str, tuple[str, str]] = field(default_factory=dict)


Subscribe = Callable[[str, str, bool], Awaitable[None]]


class Relay:
    def __init__(self, subscribe: Subscribe, shared: Callable[[str | None], bool] = lambda _sid: False) -> None:
        #: Whether a server's log messages (None: the engine's own MCP warnings) reach sessions that set a level.
        self._shared = shared
        #: Passes (un)subscriptions on: (server, the server's URI, True to subscribe).
        self._subscribe = subscribe
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._watchers: dict[tuple[str, str], int] = {}
        #: (server, the server's URI) -> the exposed URIs 2026 listen streams watch it as, with their counts.
        self._listened: dict[tuple[str, str], dict[str, int]] = {}
        #: The 2026 ``subscriptions/listen`` streams' fan-out (``changes.Listen``).
        self.bus = InMemorySubscriptionBus()
        self._calls: dict[str, dict[int, ServerRequestContext[Any, Any]]] = {}  # server -> its calls, by id
        self._handler: _EngineWarnings | None = None
        self._releasing: set[asyncio.Task[None]] = set()

    def _session(self, ctx: ServerRequestContext[Any, Any]) -> _Session | None:
        key = session_key(ctx)
        if key is None:
            return None
        entry = self._sessions.get(key)
        if entry is None:
            box = Outbox(lambda: new.session, lambda e: self._gone(key, e))
            new = entry = self._sessions[key] = _Session(ctx.session, box)
            while len(self._sessions) > MAX_SESSIONS:
                self._forget(next(iter(self._sessions)))
        self._sessions.move_to_end(key)
        return entry

    def seen(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """A request of a handshake-era session: it hears of list changes from now on."""
        self._session(ctx)

    def level_of(self, ctx: ServerRequestContext[Any, Any]) -> LoggingLevel:
        """The session's level; without a session (2026-07-28) every level, for the SDK to hold to the request's
        own ``logLevel``."""
        key = session_key(ctx)
        if key is None:
            return LEVELS[0]
        entry = self._sessions.get(key)
        return entry.level if entry is not None else DEFAULT_LEVEL

    # ------------------------------------------------------------------------------------------ handlers

    def set_level(self, ctx: ServerRequestContext[Any, Any], level: LoggingLevel) -> None:
        entry = self._session(ctx)
        if entry is not None:
            entry.level, entry.level_set, entry.session = level, True, ctx.session

    async def watch(self, ctx: ServerRequestContext[Any, Any], uri: str, route: tuple[str, str]) -> None:
        entry = self._session(ctx)
        if entry is None or uri in entry.watching:
            return
        await self._acquire(route)
        entry.watching[uri] = route
        entry.session = ctx.session

    async def _acquire(self, route: tuple[str, str]) -> None:
        if self._watchers.get(route, 0) == 0:
            await self._subscribe(*route, True)
        self._watchers[route] = self._watchers.get(route, 0) + 1

    @asynccontextmanager
    async def listening(self, routes: Sequence[tuple[str, tuple[str, str]]]) -> AsyncIterator[None]:
        """A 2026 listen stream watching these (exposed URI, route)s: subscribed at their servers meanwhile."""
        held: list[tuple[str, tuple[str, str]]] = []
        try:
            for uri, route in routes:
                try:
                    await self._acquire(route)
                except Exception as e:  # the server cannot subscribe: the stream still gets what else it asked
                    log.info("listen: subscribing %s at %s failed: %s", route[1], route[0], e)
                    continue
                held.append((uri, route))
                uris = self._listened.setdefault(route, {})
                uris[uri] = uris.get(uri, 0) + 1
            yield
        finally:
            for uri, route in held:
                uris = self._listened.get(route, {})
                uris[uri] -= 1
                if uris[uri] <= 0:
                    del uris[uri]
                if not uris:
                    self._listened.pop(route, None)
                self._release_soon(route)  # the stream's task is being cancelled: its awaits would be too

    async def unwatch(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        entry = self._session(ctx)
        route = entry.watching.pop(uri, None) if entry is not None else None
        if route is not None:
            await self._release(route)

    async def _release(self, route: tuple[str, str]) -> None:
        left = self._watchers.get(route, 0) - 1
        if left > 0:
            self._watchers[route] = left
            return
        self._watchers.pop(route, None)
        try:
            await self._subscribe(*route, False)
        except Exception as e:  # the server went away meanwhile: nothing left to unsubscribe
            log.debug("unsubscribing %s from %s failed: %s", route[1], route[0], e)

    def _gone(self, key: str, e: BaseException) -> None:
        log.debug("MCP endpoint session %s is gone: %s", key, e)
        self._forget(key)

    def _forget(self, key: str) -> None:
        entry = self._sessions.pop(key, None)
        if entry is not None:
            entry.outbox.close()
            for route in entry.watching.values():
                self._release_soon(route)

    def _release_soon(self, route: tuple[str, str]) -> None:
        task = asyncio.get_running_loop().create_task(self._release(route))
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    @contextmanager
    def running(self, server: str, ctx: ServerRequestContext[Any, Any]) -> Iterator[None]:
        """An endpoint call running a tool of ``server``: that server's log messages go to its stream."""
        calls = self._calls.setdefault(server, {})
        calls[id(ctx)] = ctx
        try:
            yield
        finally:
            calls.pop(id(ctx), None)

    # ------------------------------------------------------------------------------------------ relaying

    async def on_upstream(self, server: str, note: ServerNotification) -> None:
        """The MCP host's hook (``HostServices.on_notification``)."""
        if isinstance(note, LoggingMessageNotification):
            p = note.params
            logger = f"{server}/{p.logger}" if p.logger else server
            await self.log(p.level, p.data, logger, server)
        elif isinstance(note, ResourceUpdatedNotification):
            route = (server, str(note.params.uri))
            for entry in list(self._sessions.values()):
                for uri in [u for u, r in entry.watching.items() if r == route]:
                    entry.outbox.put(("updated", uri))
            for uri in list(self._listened.get(route, ())):
                await self.bus.publish(ResourceUpdated(uri=uri))
        elif isinstance(note, PromptListChangedNotification | ResourceListChangedNotification):
            if self._shared(server):
                await self.list_changed("prompts" if isinstance(note, PromptListChangedNotification) else "resources")

    async def list_changed(self, kind: Kind) -> None:
        """Every handshake-era session and the listen streams that asked hear that the ``kind`` list changed."""
        notice: Notice = ("list", kind)
        for entry in list(self._sessions.values()):
            entry.outbox.put(notice)
        await self.bus.publish(EVENTS[kind])

    async def log(self, level: LoggingLevel, data: Any, logger: str, server: str | None = None) -> None:
        reached: set[str] = set()
        for ctx in list(self._calls.get(server, {}).values()) if server is not None else []:
            key = session_key(ctx)
            if key is not None:
                reached.add(key)
            if at_least(level, self.level_of(ctx)):
                with suppress(Exception):  # the call ended meanwhile
                    await quiet(ctx.session.send_log_message, level, data, logger, related_request_id=ctx.request_id)
        if not self._shared(server):  # only the calls running that server's (exposed) tools hear it
            return
        for key, entry in list(self._sessions.items()):
            if entry.level_set and key not in reached and at_least(level, entry.level):
                await self._send(key, quiet(entry.session.send_log_message, level, data, logger))

    async def _send(self, key: str, sending: Awaitable[None]) -> None:
        try:
            await sending
        except Exception as e:  # the session ended: forget it
            log.debug("MCP endpoint session %s is gone: %s", key, e)
            self._forget(key)

    # ------------------------------------------------------------------------------------------ engine warnings

    def start(self) -> None:
        if self._handler is None:
            self._handler = _EngineWarnings(self, asyncio.get_running_loop())
            for name in ENGINE_LOGGERS:
                logging.getLogger(name).addHandler(self._handler)

    def stop(self) -> None:
        for entry in self._sessions.values():
            entry.outbox.close()
        if self._handler is not None:
            for name in ENGINE_LOGGERS:
                logging.getLogger(name).removeHandler(self._handler)
            self._handler = None


class _EngineWarnings(logging.Handler):
    """The engine's MCP warnings as ``notifications/message`` (from any thread; sent on the engine's loop)."""

    def __init__(self, relay: Relay, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.WARNING)
        self.relay = relay
        self.loop = loop
        self._tasks: set[asyncio.Task[None]] = set()

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == __name__ or self.loop.is_closed():
            return
        level: LoggingLevel = next((v for k, v in _PY_LEVELS.items() if record.levelno >= k), "warning")
        try:
            text = record.getMessage()
        except Exception:  # a bad format string: the record as logged
            text = str(record.msg)
        self.loop.call_soon_threadsafe(self._spawn, level, text, record.name)

    def _spawn(self, level: LoggingLevel, text: str, logger: str) -> None:
        task = self.loop.create_task(self.relay.log(level, text, f"ava-engine/{logger}"))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
