"""A client that stops reading holds up nobody and costs a bounded backlog; a change is announced when, and only when,
what the endpoint lists changed (engine.mcp_endpoint.changes and relay, without a network)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.types import ResourceUpdatedNotification, ResourceUpdatedNotificationParams, SubscriptionFilter, Tool
from mcp.types import SubscriptionsListenRequestParams as ListenParams

from engine.events import ConfigReloaded, ServerStateChanged, ToolsChanged
from engine.mcp_endpoint.changes import MAX_BUFFERED, MAX_PENDING, Kind, Listen, ToolWatch
from engine.mcp_endpoint.relay import Relay

ROUTE = ("test", "test://watched")


class Reading:
    """A session whose client reads: every notice is sent at once."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.got = asyncio.Event()

    async def _record(self, what: str) -> None:
        self.sent.append(what)
        self.got.set()

    async def send_tool_list_changed(self) -> None:
        await self._record("tools")

    async def send_prompt_list_changed(self) -> None:
        await self._record("prompts")

    async def send_resource_list_changed(self) -> None:
        await self._record("resources")

    async def send_resource_updated(self, uri: str) -> None:
        await self._record(uri)

    async def send_notification(self, note: Any, related_request_id: Any = None) -> None:
        await self._record(note.method)


class Stuck(Reading):
    """A session whose client stopped reading: the first send never returns."""

    async def _record(self, what: str) -> None:
        self.sent.append(what)
        self.got.set()
        if len(self.sent) > (1 if self.after_ack else 0):
            await asyncio.Event().wait()

    after_ack = False


def ctx(key: str, session: Reading, request_id: str = "1") -> Any:
    return SimpleNamespace(
        request=SimpleNamespace(headers={"mcp-session-id": key}), session=session, request_id=request_id
    )


async def no_subscribe(server: str, uri: str, on: bool) -> None:
    return None


def updated(uri: str) -> ResourceUpdatedNotification:
    return ResourceUpdatedNotification(params=ResourceUpdatedNotificationParams(uri=uri))


async def test_a_session_that_stopped_reading_does_not_hold_up_a_resource_update_for_the_others() -> None:
    relay = Relay(no_subscribe, lambda _sid: True)
    stuck, reading = Stuck(), Reading()
    await relay.watch(ctx("stuck", stuck), ROUTE[1], ROUTE)
    await relay.watch(ctx("reading", reading), ROUTE[1], ROUTE)
    # The relay runs in the server's own message handler: waiting on one client would stop that server's messages.
    await asyncio.wait_for(relay.on_upstream("test", updated(ROUTE[1])), 5)
    await asyncio.wait_for(reading.got.wait(), 5)
    assert reading.sent == [ROUTE[1]]
    relay.stop()


async def test_a_session_that_stopped_reading_holds_a_bounded_backlog() -> None:
    relay = Relay(no_subscribe, lambda _sid: True)
    stuck, reading = Stuck(), Reading()
    many = [f"test://r/{i}" for i in range(3 * MAX_PENDING)]
    for uri in many:
        await relay.watch(ctx("stuck", stuck), uri, ("test", uri))
    relay.seen(ctx("reading", reading))
    kinds: list[Kind] = ["tools", "prompts", "resources"]
    for round_ in range(100):
        await asyncio.wait_for(relay.list_changed(kinds[round_ % 3]), 5)
    for uri in many:
        await asyncio.wait_for(relay.on_upstream("test", updated(uri)), 5)
    while len(set(reading.sent)) < 3 or reading.sent[-1] != kinds[99 % 3]:  # the reader heard the last change
        reading.got.clear()
        await asyncio.wait_for(reading.got.wait(), 5)
    assert sorted(set(reading.sent)) == ["prompts", "resources", "tools"]
    assert len(stuck.sent) == 1  # blocked on its first notice ever since
    outbox = relay._sessions["stuck"].outbox
    assert len(outbox.pending) == MAX_PENDING  # list changes coalesced, then updates up to the cap …
    assert outbox.dropped == 3 * MAX_PENDING - (MAX_PENDING - 3)  # … and the rest dropped, not kept
    relay.stop()


async def test_a_listen_stream_that_stopped_reading_is_ended_at_its_cap_and_the_others_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    relay = Relay(no_subscribe, lambda _sid: True)

    async def route(uri: str) -> tuple[str, str]:
        return ("test", uri)

    listen = Listen(relay, route)
    stuck, reading = Stuck(), Reading()
    stuck.after_ack = True
    params = ListenParams(notifications=SubscriptionFilter(tools_list_changed=True))
    tasks = [
        asyncio.ensure_future(listen(ctx("", stuck, "stuck-1"), params)),
        asyncio.ensure_future(listen(ctx("", reading, "reading-1"), params)),
    ]
    try:
        await asyncio.wait_for(asyncio.gather(stuck.got.wait(), reading.got.wait()), 5)  # both acknowledged
        with caplog.at_level(logging.WARNING, logger="mcp.server.subscriptions"):
            for _ in range(3 * MAX_BUFFERED):
                await relay.list_changed("tools")
                await asyncio.sleep(0)  # the reading stream's task sends what it was given
        assert "backlog full; ending the stream" in caplog.text
        assert reading.sent.count("notifications/tools/list_changed") == 3 * MAX_BUFFERED
        assert len(stuck.sent) == 2  # the ack, then the first change it never took
    finally:
        listen.close()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_change_is_announced_when_what_the_endpoint_lists_changed() -> None:
    tools = [Tool(name="a", input_schema={"type": "object"})]
    share = ["test"]
    heard: list[Kind] = []

    async def changed(kind: Kind) -> None:
        heard.append(kind)

    watch = ToolWatch(lambda: list(tools), lambda: share, lambda sid: sid in share, changed)
    await watch.seen(ToolsChanged(revision=1))  # another server's tool, or a call's view: not listed here
    assert heard == []
    tools.append(Tool(name="b", input_schema={"type": "object"}))
    await watch.seen(ToolsChanged(revision=2))
    assert heard == ["tools"]
    await watch.seen(ServerStateChanged(server="other", state="stopped"))  # not shared
    await watch.seen(ServerStateChanged(server="test", state="restarting"))
    await watch.seen(ServerStateChanged(server="test", state="restarting"))  # was not up: nothing new
    await watch.seen(ServerStateChanged(server="test", state="up"))
    assert heard == ["tools", "prompts", "resources", "prompts", "resources"]
    share.append("other")
    await watch.seen(ConfigReloaded())
    await watch.seen(ConfigReloaded())
    assert heard[5:] == ["prompts", "resources"]
