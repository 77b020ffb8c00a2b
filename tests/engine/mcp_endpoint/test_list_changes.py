"""The endpoint's clients hear that a list changed — a server behind it changed its own, or the engine's tool set
did — and 2026-07-28 clients hear it, and their resources' updates, on ``subscriptions/listen``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import Subscription
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged
from mcp.types import (
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    ToolListChangedNotification,
)
from mcp_endpoint_helpers import TOKEN, Calls, endpoint_settings, make_tools
from upstream import EXTRA_TOOL, WATCHED, server_config
from upstream_2026 import server_config as modern_server

from engine.app import Engine
from engine.config.models import Settings
from engine.http.server import HttpServer
from tests.waiting import wait_until

#: The server behind the endpoint announces its list changes; the 2025 era's resources/subscribe is deprecated.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
EXPOSED = ["test_trigger_tool_change", "test_trigger_prompt_change", "test_trigger_resource_change"]
EXPOSED += [EXTRA_TOOL, "test_touch_watched", "book_table"]
NOTICES: dict[type[Any], str] = {
    ToolListChangedNotification: "tools",
    PromptListChangedNotification: "prompts",
    ResourceListChangedNotification: "resources",
}
EVENTS: dict[type[Any], str] = {
    ToolsListChanged: "tools",
    PromptsListChanged: "prompts",
    ResourcesListChanged: "resources",
}
WAIT_S = 10


def settings(expose: list[str] = EXPOSED, behind: bool = True) -> Settings:
    base = endpoint_settings(expose=expose).model_dump(mode="json", exclude_unset=True)
    base["engine"]["mcp_server"].update(share=["*"], auth_token=TOKEN)
    base["mcp"] = {"servers": {"test": server_config()} if behind else {}}
    return Settings.model_validate(base)


@pytest.fixture
async def engine() -> AsyncIterator[Engine]:
    """An engine with the conformance server ``test`` behind its endpoint (its lists change when asked to)."""
    book_table = [t for t in make_tools(Calls()) if t.name == "book_table"]
    engine = Engine(settings(), extra_tools=book_table, serve_http=True)
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


@asynccontextmanager
async def client(engine: Engine, mode: str, **kw: Any) -> AsyncIterator[Client]:
    http_server = next(c for c in engine.components if isinstance(c, HttpServer))
    url = f"{http_server.url}{engine.settings.engine.mcp_server.path}"
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, **kw) as c:
            yield c


async def changed_2025(
    c: Client, heard: asyncio.Queue[str], tool: str, args: dict[str, Any] | None = None
) -> tuple[str, bool]:
    """Call ``tool`` until a list change is heard: (the list heard of, whether the extra item is now in it). The SDK
    client opens its standalone stream after the handshake, on its own, and a notice sent before it is open has
    nowhere to go (no event store, no replay); each call changes the list again, so every call deserves its notice."""
    for _ in range(3):
        result = await c.call_tool(tool, args or {})
        assert not result.is_error, result
        try:
            return await asyncio.wait_for(heard.get(), 3), "added" in str(result.content[0])
        except TimeoutError:
            continue
    raise AssertionError(f"no list_changed after three calls of {tool}")


async def test_a_2025_client_hears_each_list_change_of_the_server_behind(engine: Engine) -> None:
    heard: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        kind = NOTICES.get(type(message))
        if kind is not None:
            heard.put_nowait(kind)

    async with client(engine, "legacy", message_handler=on_message) as c:
        caps = c.server_capabilities
        assert caps.tools and caps.tools.list_changed and caps.prompts and caps.prompts.list_changed
        assert caps.resources and caps.resources.list_changed
        kind, added = await changed_2025(c, heard, "test_trigger_tool_change")
        assert kind == "tools" and (EXTRA_TOOL in [t.name for t in (await c.list_tools()).tools]) == added
        kind, added = await changed_2025(c, heard, "test_trigger_prompt_change")
        assert (
            kind == "prompts" and ("test_extra_prompt" in [p.name for p in (await c.list_prompts()).prompts]) == added
        )
        kind, added = await changed_2025(c, heard, "test_trigger_resource_change")
        resources = [str(r.uri) for r in (await c.list_resources()).resources]
        assert kind == "resources" and ("test://extra-resource" in resources) == added


async def next_change(sub: Subscription) -> Any:
    return await asyncio.wait_for(sub.__anext__(), WAIT_S)


async def test_a_2026_client_hears_list_changes_on_its_listen_stream(engine: Engine) -> None:
    async with client(engine, "auto") as c:
        caps = c.server_capabilities
        assert caps.tools and caps.tools.list_changed and caps.prompts and caps.prompts.list_changed
        async with c.listen(tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True) as sub:
            for kind in ("tool", "prompt", "resource"):
                assert not (await c.call_tool(f"test_trigger_{kind}_change", {})).is_error
                assert EVENTS[type(await next_change(sub))] == f"{kind}s"
        assert EXTRA_TOOL in [t.name for t in (await c.list_tools()).tools]


async def test_a_listen_stream_hears_only_what_it_asked_for(engine: Engine) -> None:
    async with client(engine, "auto") as c, c.listen(prompts_list_changed=True) as sub:
        assert not (await c.call_tool("test_trigger_tool_change", {})).is_error
        assert not (await c.call_tool("test_trigger_prompt_change", {})).is_error
        # The tool change came first (and, relisted, reached the registry before the prompt's): never on this stream.
        assert isinstance(await next_change(sub), PromptsListChanged)


async def test_a_listen_stream_gets_updates_of_the_resources_it_names_while_it_lasts(engine: Engine) -> None:
    async with client(engine, "auto") as c:
        async with c.listen(resource_subscriptions=[WATCHED]) as sub:
            touched = await c.call_tool("test_touch_watched", {})
            assert "1 watching" in str(touched.content[0])  # subscribed at the server behind
            event = await next_change(sub)
            assert isinstance(event, ResourceUpdated) and event.uri == WATCHED

        async def unwatched() -> bool:  # the stream's end reaches the endpoint when the HTTP response is closed
            touched = await c.call_tool("test_touch_watched", {})
            return "0 watching" in str(touched.content[0])

        # unsubscribed at the server behind once the stream ended
        await wait_until(unwatched, what="the server behind to be unsubscribed")


async def test_the_engines_own_tool_set_changing_is_announced(engine: Engine) -> None:
    """A config reload that changes ``expose`` changes the endpoint's tools/list; the server behind going away
    takes its tools, prompts and resources with it: both are announced."""
    without_book_table = [n for n in EXPOSED if n != "book_table"]
    async with client(engine, "auto") as c:
        async with c.listen(tools_list_changed=True) as sub:
            await engine.reload(settings(without_book_table))
            assert isinstance(await next_change(sub), ToolsListChanged)
        assert "book_table" not in [t.name for t in (await c.list_tools()).tools]
        async with c.listen(tools_list_changed=True, prompts_list_changed=True) as sub:
            await engine.reload(settings(without_book_table, behind=False))
            heard = {type(await next_change(sub)), type(await next_change(sub))}
            assert heard == {ToolsListChanged, PromptsListChanged}
        assert [t.name for t in (await c.list_tools()).tools] == []


@pytest.fixture
async def modern_engine() -> AsyncIterator[Engine]:
    """An engine with a 2026-07-28 server behind its endpoint (upstream_2026.py)."""
    base = endpoint_settings(expose=["modern_add_prompt", "modern_add_resource", "modern_touch"]).model_dump(
        mode="json", exclude_unset=True
    )
    base["engine"]["mcp_server"].update(share=["*"], auth_token=TOKEN)
    base["mcp"] = {"servers": {"modern": modern_server()}}
    engine = Engine(Settings.model_validate(base), serve_http=True)
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


async def test_list_changes_of_a_2026_server_behind_reach_2025_and_2026_clients(modern_engine: Engine) -> None:
    """A 2026 server announces its changes only on a listen stream: the engine listens, and relays them."""
    engine = modern_engine
    heard: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        kind = NOTICES.get(type(message))
        if kind is not None:
            heard.put_nowait(kind)

    async with client(engine, "auto") as modern, client(engine, "legacy", message_handler=on_message) as old:
        async with modern.listen(prompts_list_changed=True, resources_list_changed=True) as sub:
            kind, _ = await changed_2025(old, heard, "modern_add_prompt", {"name": "late"})
            assert kind == "prompts"
            assert isinstance(await next_change(sub), PromptsListChanged)
            assert "modern_late" in [p.name for p in (await modern.list_prompts()).prompts]
            assert not (await modern.call_tool("modern_add_resource", {"name": "later"})).is_error
            assert isinstance(await next_change(sub), ResourcesListChanged)
            assert await asyncio.wait_for(heard.get(), WAIT_S) == "resources"
            assert "modern://later" in [str(r.uri) for r in (await old.list_resources()).resources]


async def test_resource_updates_of_a_2026_server_behind_reach_2025_and_2026_subscribers(modern_engine: Engine) -> None:
    """A 2026 server has no resources/subscribe: the engine names the watched resources on a listen stream of its
    own, renewed as the set changes, and relays their updates to both eras' subscribers."""
    updates: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            updates.put_nowait(str(message.params.uri))

    engine = modern_engine
    async with client(engine, "auto") as modern, client(engine, "legacy", message_handler=on_message) as old:
        await old.session.subscribe_resource("modern://item/always")
        async with modern.listen(resource_subscriptions=["modern://item/other"]) as sub:
            assert not (await old.call_tool("modern_touch", {"name": "always"})).is_error
            assert await asyncio.wait_for(updates.get(), WAIT_S) == "modern://item/always"
            assert not (await old.call_tool("modern_touch", {"name": "other"})).is_error
            event = await next_change(sub)
            assert isinstance(event, ResourceUpdated) and event.uri == "modern://item/other"
        await old.session.unsubscribe_resource("modern://item/always")
        # Only modern://item/other may be watched now (until the listen stream's end reaches the endpoint): the next
        # update the old client hears must be of a resource it watches again, not of modern://item/always.
        await old.session.subscribe_resource("modern://item/again")
        assert not (await old.call_tool("modern_touch", {"name": "always"})).is_error
        assert not (await old.call_tool("modern_touch", {"name": "again"})).is_error
        assert await asyncio.wait_for(updates.get(), WAIT_S) == "modern://item/again"
