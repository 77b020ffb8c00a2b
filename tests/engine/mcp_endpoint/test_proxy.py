"""The endpoint passes on what the MCP servers behind it offer: resources, prompts, completion, logs, progress."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from engine_fixture import red_pixel_png, short_wav
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    INVALID_PARAMS,
    AudioContent,
    BlobResourceContents,
    ImageContent,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
    TextContent,
    TextResourceContents,
)
from mcp_endpoint_helpers import TOKEN, endpoint_settings
from upstream import server_config

from engine.app import Engine
from engine.config.models import Settings
from engine.http.server import HttpServer

#: The 2025 era's logging/setLevel and resources/subscribe are what is tested here (deprecated by 2026-07-28).
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
EXPOSED = ["test_tool_with_logging", "test_touch_watched", "test_steps", "test_picture"]
MODES = ["legacy", "auto"]


def settings(twin: bool = False, share: tuple[str, ...] = ("*",)) -> Settings:
    base = endpoint_settings(expose=EXPOSED).model_dump(mode="json", exclude_unset=True)
    base["engine"]["mcp_server"]["auth_token"] = TOKEN
    base["engine"]["mcp_server"]["share"] = list(share)
    base["mcp"] = {"servers": {"test": server_config(), **({"twin": server_config(named=False)} if twin else {})}}
    return Settings.model_validate(base)


@pytest.fixture
async def url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """The endpoint of an engine with server ``test`` behind it (and its copy ``twin`` when parametrized True)."""
    engine = Engine(settings(twin=getattr(request, "param", False)), serve_http=True)
    await engine.start()
    try:
        http = next(c for c in engine.components if isinstance(c, HttpServer))
        yield f"{http.url}{engine.settings.engine.mcp_server.path}"
    finally:
        await engine.stop()


@asynccontextmanager
async def client(url: str, mode: str = "legacy", **kw: Any) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, **kw) as c:
            yield c


@pytest.mark.parametrize("mode", MODES)
async def test_resources_of_the_server_behind_are_listed_spaced_by_server_and_read_back(url: str, mode: str) -> None:
    async with client(url, mode) as c:
        listed = (await c.list_resources()).resources
        by_uri = {str(r.uri): r for r in listed}
        assert set(by_uri) == {"test://static-text", "test://static-binary", "test://watched-resource"}
        watched = by_uri["test://watched-resource"]
        assert watched.name == "test_watched" and watched.meta == {"io.ava/server": "test"}
        assert watched.annotations is not None and watched.annotations.priority == 0.5  # the server's own, kept
        text = (await c.read_resource("test://static-text")).contents[0]
        assert isinstance(text, TextResourceContents) and text.text.startswith("This is the content")
        blob = (await c.read_resource("test://static-binary")).contents[0]
        assert isinstance(blob, BlobResourceContents) and blob.mime_type == "image/png"
        templates = (await c.list_resource_templates()).resource_templates
        assert [(t.uri_template, t.name) for t in templates] == [("test://template/{id}/data", "test_template")]
        by_template = (await c.read_resource("test://template/123/data")).contents[0]
        assert isinstance(by_template, TextResourceContents) and '"id":"123"' in by_template.text
        with pytest.raises(MCPError) as e:
            await c.read_resource("test://nowhere")
        assert e.value.code == INVALID_PARAMS and e.value.error.data == {"uri": "test://nowhere"}
        template = ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data")
        assert (await c.complete(template, {"name": "id", "value": "pa"})).completion.values == [
            "paris",
            "park",
            "party",
        ]
        with pytest.raises(MCPError) as e:
            await c.complete(
                ResourceTemplateReference(type="ref/resource", uri="test://no/{x}"), {"name": "x", "value": ""}
            )
        assert e.value.code == INVALID_PARAMS and "test://no/{x}" in e.value.message


@pytest.mark.parametrize("mode", MODES)
async def test_prompts_are_named_server_prompt_and_completion_is_routed(url: str, mode: str) -> None:
    async with client(url, mode) as c:
        names = [p.name for p in (await c.list_prompts()).prompts]
        assert names == [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
        ]
        got = await c.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
        first = got.messages[0].content
        assert isinstance(first, TextContent) and first.text == "Prompt with arguments: arg1='hello', arg2='world'"
        image = (await c.get_prompt("test_prompt_with_image")).messages[0].content
        assert isinstance(image, ImageContent) and image.mime_type == "image/png"
        done = await c.complete(
            PromptReference(type="ref/prompt", name="test_prompt_with_arguments"), {"name": "arg1", "value": "par"}
        )
        assert done.completion.values == ["paris", "park", "party"]
        with pytest.raises(MCPError) as e:
            await c.get_prompt("test_no_such_prompt")
        assert e.value.code == INVALID_PARAMS and "test_no_such_prompt" in e.value.message


async def test_upstream_logs_reach_the_client_at_or_above_its_level(url: str) -> None:
    got: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        got.append(params)

    async with client(url, logging_callback=on_log) as c:
        await c.set_logging_level("info")
        result = await c.call_tool("test_tool_with_logging", {})
        assert not result.is_error
        assert [p.data for p in got] == ["Tool execution started", "Tool processing data", "Tool execution completed"]
        assert {p.level for p in got} == {"info"} and got[0].logger == "test/upstream"
        got.clear()
        await c.set_logging_level("warning")
        assert not (await c.call_tool("test_tool_with_logging", {})).is_error  # answered: its logs came before
        assert got == []


async def test_a_subscription_is_forwarded_and_updates_relayed_until_unsubscribed(url: str) -> None:
    updates: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            updates.put_nowait(str(message.params.uri))

    async with client(url, message_handler=on_message) as c:
        await c.session.subscribe_resource("test://watched-resource")
        touched = await c.call_tool("test_touch_watched", {})
        assert "1 watching" in str(touched.content[0])
        assert await asyncio.wait_for(updates.get(), 10) == "test://watched-resource"
        await c.session.unsubscribe_resource("test://watched-resource")
        touched = await c.call_tool("test_touch_watched", {})
        assert "0 watching" in str(touched.content[0])  # the server behind was unsubscribed too
        assert updates.empty()


@pytest.mark.parametrize("mode", MODES)
async def test_progress_and_annotations_of_the_server_behind_reach_the_client(url: str, mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with client(url, mode) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        logging_tool = tools["test_tool_with_logging"]
        assert logging_tool.annotations is not None and logging_tool.annotations.read_only_hint is True
        result = await c.call_tool("test_steps", {}, progress_callback=on_progress)
        assert not result.is_error
        assert seen == [(1, 2, "step 1"), (2, 2, "step 2")]


@pytest.mark.parametrize("mode", MODES)
async def test_images_and_audio_of_the_server_behind_are_passed_through_whole(url: str, mode: str) -> None:
    async with client(url, mode) as c:
        result = await c.call_tool("test_picture", {})
    assert not result.is_error
    text, image, audio = result.content
    assert isinstance(text, TextContent) and text.text == "A red pixel and a click."
    assert isinstance(image, ImageContent) and image.data == red_pixel_png() and image.mime_type == "image/png"
    assert isinstance(audio, AudioContent) and audio.data == short_wav() and audio.mime_type == "audio/wav"
    assert result.structured_content is not None and "sha256" in str(result.structured_content["data"])  # the model's


@pytest.mark.parametrize("url", [True], indirect=True, ids=["with-twin"])
async def test_a_uri_two_servers_list_is_wrapped_for_the_second_and_reads_back_from_it(url: str) -> None:
    async with client(url) as c:
        listed = {str(r.uri): r for r in (await c.list_resources()).resources}
        assert listed["test://static-text"].meta == {"io.ava/server": "test"}
        twin = listed["ava://twin/test://static-text"]
        assert twin.name == "twin_static-text" and twin.meta == {"io.ava/server": "twin"}
        read = (await c.read_resource("ava://twin/test://static-text")).contents[0]
        assert isinstance(read, TextResourceContents) and str(read.uri) == "ava://twin/test://static-text"
        assert "twin_simple_prompt" in [p.name for p in (await c.list_prompts()).prompts]


async def test_the_engines_own_mcp_warnings_reach_a_client_that_set_a_level(url: str) -> None:
    got: asyncio.Queue[LoggingMessageNotificationParams] = asyncio.Queue()

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        got.put_nowait(params)

    async with client(url, logging_callback=on_log) as c:
        await c.set_logging_level("warning")
        logging.getLogger("engine.mcp.host").info("below the level: not sent")
        logging.getLogger("engine.mcp.host").error("MCP server files: gave up after 5 restarts")
        first = await asyncio.wait_for(got.get(), 10)
    assert (first.level, first.data, first.logger) == (
        "error",
        "MCP server files: gave up after 5 restarts",
        "ava-engine/engine.mcp.host",
    )


@pytest.mark.parametrize("level", ["debug", None])
async def test_2026_clients_get_upstream_logs_only_for_calls_that_ask_for_them(url: str, level: str | None) -> None:
    got: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        got.append(params)

    async with client(url, "auto", logging_callback=on_log, log_level=level) as c:
        assert not (await c.call_tool("test_tool_with_logging", {})).is_error  # its logs ride before the answer
    said = ["Tool execution started", "Tool processing data", "Tool execution completed", "too fine to pass on"]
    assert [p.data for p in got] == (said if level else [])  # at the level the call asked for, or none


async def test_nothing_behind_the_endpoint_is_shared_unless_listed() -> None:
    """Serving one tool must not open every server's resources and prompts to the endpoint's clients: like tools,
    a server's resources, prompts and logs are served only when ``engine.mcp_server.share`` names it."""
    engine = Engine(settings(twin=True, share=("twin",)), serve_http=True)
    await engine.start()
    try:
        http = next(c for c in engine.components if isinstance(c, HttpServer))
        async with client(f"{http.url}{engine.settings.engine.mcp_server.path}") as c:
            listed = {str(r.uri): r.name for r in (await c.list_resources()).resources}
            assert listed and all(name.startswith("twin_") for name in listed.values()), listed
            assert all(p.name.startswith("twin_") for p in (await c.list_prompts()).prompts)
            with pytest.raises(MCPError):  # not even by the wrapped form naming the server
                await c.read_resource("ava://test/test://static-text")
    finally:
        await engine.stop()
    engine = Engine(settings(share=()), serve_http=True)
    await engine.start()
    try:
        http = next(c for c in engine.components if isinstance(c, HttpServer))
        async with client(f"{http.url}{engine.settings.engine.mcp_server.path}") as c:
            assert (await c.list_resources()).resources == []
            assert (await c.list_prompts()).prompts == []
            assert [t.name for t in (await c.list_tools()).tools]  # the exposed tools are still served
    finally:
        await engine.stop()
