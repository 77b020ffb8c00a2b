"""Resource subscriptions at a 2026-07-28 server behind the engine: one ``subscriptions/listen`` stream per server.

Why it exists: a 2026 server has no ``resources/subscribe``; a client names the resources it wants updates of on a
listen stream, fixed for the stream's life. So for each such server the endpoint holds one stream naming every URI
its own clients watch there (counted by ``relay.Relay``, which calls ``set`` on the first watcher and after the
last), and when that set changes opens a new stream before ending the old one (an update in between may come
twice — a level trigger — never not at all). The updates go where a 2025 server's notifications go
(``Relay.on_upstream``). A dropped stream is opened again after ``RELISTEN_S`` while the server's connection lives.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.subscriptions import ResourceUpdated
from mcp.types import ResourceUpdatedNotification, ResourceUpdatedNotificationParams, ServerNotification

if TYPE_CHECKING:
    from engine.mcp.connection import Connection

log = logging.getLogger(__name__)

RELISTEN_S = 1.0
Relayed = Callable[[str, ServerNotification], Awaitable[None]]


class ModernWatch:
    def __init__(self, relayed: Relayed) -> None:
        self._relayed = relayed
        self._uris: dict[str, set[str]] = {}  # server -> its URIs watched
        self._streams: dict[str, asyncio.Task[None]] = {}

    async def set(self, server: str, conn: Connection, uri: str, on: bool) -> None:
        """Watch ``uri`` at ``server`` (``on``) or stop; returns once the server has acknowledged the new set."""
        uris = self._uris.setdefault(server, set())
        if on:
            uris.add(uri)
        else:
            uris.discard(uri)
        old = self._streams.get(server)
        if not uris:
            self._streams.pop(server, None)
        else:
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            task = asyncio.get_running_loop().create_task(self._hold(server, conn, sorted(uris), ready))
            try:
                await ready
            except BaseException:  # refused: the stream there was stays as it was
                task.cancel()
                if on:
                    uris.discard(uri)
                raise
            self._streams[server] = task
        if old is not None:
            old.cancel()

    async def _hold(self, server: str, conn: Connection, uris: list[str], ready: asyncio.Future[None]) -> None:
        client = conn.client
        while client is not None and not conn.dead.done():
            try:
                async with client.listen(resource_subscriptions=uris) as sub:
                    if not ready.done():
                        ready.set_result(None)
                    async for event in sub:
                        if isinstance(event, ResourceUpdated):
                            params = ResourceUpdatedNotificationParams(uri=event.uri)
                            await self._relayed(server, ResourceUpdatedNotification(params=params))
                return
            except SubscriptionLost as e:
                log.info("server %s: resource listen stream lost (%s); listening again", server, e)
                await asyncio.sleep(RELISTEN_S)
            except Exception as e:  # refused, or the server went away: the endpoint's subscriber hears why
                if not ready.done():
                    ready.set_exception(e)
                else:
                    log.info("server %s: resource listen stream ended: %s", server, e)
                return

    def stop(self) -> None:
        for task in self._streams.values():
            task.cancel()
        self._streams.clear()
        self._uris.clear()
