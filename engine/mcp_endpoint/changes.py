"""Telling the endpoint's clients that a list changed or a resource was updated, without waiting on any of them.

Why it exists: the endpoint's lists follow the engine (a server behind it comes up or goes down, relists its
tools, changes its prompts or resources; a config reload changes ``expose`` or ``share``), and its clients
should learn of it as they would from the servers directly — yet one client that stops reading must hold up
nobody (not the other clients, not the server whose notification is being relayed) and must not make the
engine hoard notices for it.

* Handshake-era sessions (2025-11-25 …) get ``notifications/{tools,prompts,resources}/list_changed`` and
  ``notifications/resources/updated`` on their standalone stream through an ``Outbox``: the notices not yet sent,
  as a set (a list change is a level trigger: one pending is as good as a hundred), sent by one task. A session
  holds at most ``MAX_PENDING`` of them; further resource updates are dropped while it does not read.
* 2026-07-28 clients open ``subscriptions/listen`` (SEP-2575): the SDK's ``ListenHandler`` over an in-memory bus,
  at most ``MAX_LISTENERS`` streams, each ended when ``MAX_BUFFERED`` events wait unread (the client re-listens
  and refetches; there is no replay). The resources a stream names are subscribed at their server while it lasts.
* ``ToolWatch`` decides when the *endpoint's* tool list changed: after every ``tools.changed``, ``server.state``
  and ``config.reloaded`` event it compares what ``tools/list`` would answer with what it answered before; a
  shared server going up or down, or ``share`` changed by a reload, changes the prompt and resource lists.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol

from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    SubscriptionBus,
    ToolsListChanged,
)
from mcp.types import SubscriptionsListenRequestParams, SubscriptionsListenResult, Tool

from engine.events import ConfigReloaded, EventBus, ServerStateChanged, ToolsChanged

log = logging.getLogger(__name__)

Kind = Literal["tools", "prompts", "resources"]
#: ("list", kind) or ("updated", the resource's URI as the client knows it).
Notice = tuple[Literal["list", "updated"], str]
MAX_PENDING = 64
MAX_LISTENERS = 1000
MAX_BUFFERED = 64
EVENTS: dict[Kind, ServerEvent] = {
    "tools": ToolsListChanged(),
    "prompts": PromptsListChanged(),
    "resources": ResourcesListChanged(),
}


async def _deliver(session: ServerSession, notice: Notice) -> None:
    what, value = notice
    if what == "updated":
        await session.send_resource_updated(value)
    elif value == "tools":
        await session.send_tool_list_changed()
    elif value == "prompts":
        await session.send_prompt_list_changed()
    else:
        await session.send_resource_list_changed()


class Outbox:
    """One handshake-era session's notices not yet sent, sent in order by at most one task."""

    def __init__(self, session: Callable[[], ServerSession], gone: Callable[[BaseException], None]) -> None:
        self._session = session
        self._gone = gone
        self.pending: dict[Notice, None] = {}  # an ordered set
        self.dropped = 0
        self._task: asyncio.Task[None] | None = None

    def put(self, notice: Notice) -> bool:
        """Queue ``notice`` (already pending: nothing to add); False when the session has ``MAX_PENDING`` unsent."""
        if notice not in self.pending:
            if len(self.pending) >= MAX_PENDING:
                self.dropped += 1
                return False
            self.pending[notice] = None
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())
        return True

    async def _drain(self) -> None:
        while self.pending:
            notice = next(iter(self.pending))
            del self.pending[notice]
            try:
                await _deliver(self._session(), notice)
            except Exception as e:  # the session ended
                self.pending.clear()
                self._gone(e)
                return

    def close(self) -> None:
        self.pending.clear()
        if self._task is not None:
            self._task.cancel()


class ListenRelay(Protocol):
    """What ``Listen`` uses of the relay (``engine.mcp_endpoint.relay.Relay``)."""

    @property
    def bus(self) -> SubscriptionBus: ...

    def listening(self, routes: Sequence[tuple[str, tuple[str, str]]]) -> AbstractAsyncContextManager[None]: ...


class Listen:
    """``subscriptions/listen``: the SDK's handler, with the named resources subscribed at their servers meanwhile."""

    def __init__(self, relay: ListenRelay, route: Callable[[str], Awaitable[tuple[str, str]]]) -> None:
        self._relay = relay
        self._route = route
        self._handler = ListenHandler(relay.bus, max_subscriptions=MAX_LISTENERS, max_buffered_events=MAX_BUFFERED)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        routes: list[tuple[str, tuple[str, str]]] = []
        for uri in dict.fromkeys(params.notifications.resource_subscriptions or ()):
            try:
                routes.append((uri, await self._route(uri)))
            except Exception as e:  # a URI nobody serves is honoured and never fires (as the SDK does)
                log.debug("listen: %s is served by no server behind the endpoint: %s", uri, e)
        async with self._relay.listening(routes):
            return await self._handler(ctx, params)

    def close(self) -> None:
        self._handler.close()


class ToolWatch:
    """Announces a change of what ``tools/list`` answers, and of the prompt and resource lists when a shared
    server comes or goes or ``share`` changes."""

    def __init__(
        self,
        tools: Callable[[], Sequence[Tool]],
        share: Callable[[], Sequence[str]],
        shared: Callable[[str | None], bool],
        changed: Callable[[Kind], Awaitable[None]],
    ) -> None:
        self._tools = tools
        self._share = share
        self._shared = shared
        self._changed = changed
        self._listed = self._fingerprint()
        self._shared_now = tuple(share())
        self._up: dict[str, bool] = {}

    def _fingerprint(self) -> tuple[str, ...]:
        return tuple(t.model_dump_json(by_alias=True, exclude_none=True) for t in self._tools())

    async def run(self, bus: EventBus) -> None:
        kinds = {ToolsChanged.type, ServerStateChanged.type, ConfigReloaded.type}
        self._listed = self._fingerprint()
        with bus.subscribe(types=kinds) as sub:
            async for event in sub:
                try:
                    await self.seen(event)
                except Exception as e:  # one bad event must not end the watch
                    log.warning("MCP endpoint: announcing a list change failed: %s", e)

    async def seen(self, event: object) -> None:
        lists: set[Kind] = set()
        if isinstance(event, ServerStateChanged):
            up = event.state == "up"
            was_up = self._up.get(event.server, True)  # up before this watch began, for all it knows
            if (up or was_up) and self._shared(event.server):
                lists |= {"prompts", "resources"}
            self._up[event.server] = up
        elif isinstance(event, ConfigReloaded) and tuple(self._share()) != self._shared_now:
            self._shared_now = tuple(self._share())
            lists |= {"prompts", "resources"}
        listed = self._fingerprint()
        if listed != self._listed:
            self._listed = listed
            lists.add("tools")
        for kind in sorted(lists):
            await self._changed(kind)
