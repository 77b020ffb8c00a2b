"""The aiohttp→ASGI adapter on its own: streamed request body, streamed response, repeated headers, disconnect."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from engine.mcp_endpoint.asgi import Receive, Send, serve_asgi


@pytest.fixture
async def served() -> AsyncIterator[Any]:
    runners: list[web.AppRunner] = []

    async def factory(app: Any) -> str:
        async def handler(request: web.Request) -> web.StreamResponse:
            return await serve_asgi(app, request)

        aio = web.Application()
        aio.router.add_route("*", "/x", handler)
        runner = web.AppRunner(aio)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        return f"http://127.0.0.1:{runner.addresses[0][1]}/x"

    yield factory
    for r in runners:
        await r.cleanup()


async def test_body_scope_and_streamed_response(served: Any) -> None:
    seen: dict[str, Any] = {}

    async def app(scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        seen.update(method=scope["method"], path=scope["path"], qs=scope["query_string"], body=body)
        seen["headers"] = dict(scope["headers"])
        await send({"type": "http.response.start", "status": 201, "headers": [(b"x-a", b"1"), (b"x-a", b"2")]})
        await send({"type": "http.response.body", "body": b"one,", "more_body": True})
        await send({"type": "http.response.body", "body": b"two", "more_body": False})
        seen["after"] = await receive()  # after the response: the request is over

    url = await served(app)

    async def chunks() -> AsyncIterator[bytes]:
        for part in (b"a" * 70_000, b"b" * 70_000):
            yield part

    async with aiohttp.ClientSession() as http:
        async with http.post(url + "?q=1", data=chunks(), headers={"X-Token": "t"}) as r:
            assert r.status == 201
            assert r.headers.getall("x-a") == ["1", "2"]
            assert await r.read() == b"one,two"
    assert seen["method"] == "POST" and seen["path"] == "/x" and seen["qs"] == b"q=1"
    assert seen["body"] == b"a" * 70_000 + b"b" * 70_000
    assert seen["headers"][b"x-token"] == b"t"
    assert seen["after"] == {"type": "http.disconnect"}


async def test_receive_blocks_until_the_client_leaves_then_reports_disconnect(served: Any) -> None:
    first_event_sent = asyncio.Event()
    disconnected = asyncio.Event()

    async def sse(scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        await receive()  # the (empty) body
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"data: hello\n\n", "more_body": True})
        first_event_sent.set()
        msg = await receive()  # must block (not spin) until the client goes away
        if msg["type"] == "http.disconnect":
            disconnected.set()

    url = await served(sse)
    async with aiohttp.ClientSession() as http:
        resp = await http.get(url)
        line = await resp.content.readline()
        assert line == b"data: hello\n"
        await first_event_sent.wait()
        assert not disconnected.is_set()
        resp.close()  # the client leaves mid-stream
    await asyncio.wait_for(disconnected.wait(), 5)


async def test_an_app_that_sends_nothing_is_a_500(served: Any) -> None:
    async def silent(scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        return None

    url = await served(silent)
    async with aiohttp.ClientSession() as http, http.get(url) as r:
        assert r.status == 500
