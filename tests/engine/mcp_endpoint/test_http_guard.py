"""Who may reach the endpoint: bearer token, Host/Origin (DNS rebinding), enabled flag, /ready, reload."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import httpx2
import pytest
from mcp import MCPError
from mcp_endpoint_helpers import TOKEN, Served, endpoint_settings, mcp_client

from engine.app import Engine
from engine.http.server import HttpServer

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
JSON_SSE = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def post_init(url: str, **headers: str) -> tuple[int, str, dict[str, str]]:
    async with aiohttp.ClientSession() as http:
        async with http.post(url, data=json.dumps(INIT), headers={**JSON_SSE, **headers}) as r:
            return r.status, await r.text(), dict(r.headers)


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer"],
    ids=["missing", "wrong", "other-scheme", "longer", "prefix", "empty"],
)
async def test_missing_or_wrong_token_is_401_and_never_echoes_the_secret(serve: Any, authorization: str | None) -> None:
    s: Served = await serve()
    headers = {"Authorization": authorization} if authorization else {}
    status, body, resp_headers = await post_init(s.url, **headers)
    assert status == 401
    assert "bearer token" in body and TOKEN not in body
    assert resp_headers.get("WWW-Authenticate", "").startswith("Bearer")


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
async def test_right_token_opens_a_session(serve: Any, scheme: str) -> None:
    s: Served = await serve()
    status, body, headers = await post_init(s.url, Authorization=f"{scheme} {TOKEN}")
    assert status == 200, body
    assert headers.get("mcp-session-id")


async def test_sdk_client_with_a_wrong_token_cannot_connect(serve: Any) -> None:
    s: Served = await serve()
    with pytest.raises(BaseExceptionGroup) as err:  # the SDK reports the 401 from its transport task group
        async with mcp_client(s.url, token="nope"):
            pass
    assert err.group_contains(MCPError, depth=None)


async def test_no_token_configured_means_no_auth(serve: Any) -> None:
    s: Served = await serve(auth_token=None)
    status, _, _ = await post_init(s.url)
    assert status == 200


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example.com"}, 421),
        ({"Host": "evil.example.com:8080"}, 421),
        ({"Origin": "http://evil.example.com"}, 403),
        ({"Origin": "http://127.0.0.1.evil.example.com"}, 403),
        ({"Origin": "null"}, 403),
    ],
)
async def test_dns_rebinding_host_and_origin_are_rejected_before_auth(
    serve: Any, headers: dict[str, str], status: int
) -> None:
    s: Served = await serve()
    got, body, _ = await post_init(s.url, Authorization=f"Bearer {TOKEN}", **headers)
    assert got == status, body


@pytest.mark.parametrize("origin", ["http://localhost:3000", "http://127.0.0.1:9", "https://agents.example.com"])
async def test_configured_origins_are_accepted(serve: Any, origin: str) -> None:
    s: Served = await serve(allowed_origins=["http://localhost:*", "http://127.0.0.1:9", "https://agents.example.com"])
    status, body, _ = await post_init(s.url, Authorization=f"Bearer {TOKEN}", Origin=origin)
    assert status == 200, body


@pytest.mark.parametrize("origin", ["http://localhost:3000", "http://127.0.0.1:9"])
async def test_loopback_origins_are_refused_unless_listed(serve: Any, origin: str) -> None:
    s: Served = await serve(allowed_origins=["https://agents.example.com"])
    status, body, _ = await post_init(s.url, Authorization=f"Bearer {TOKEN}", Origin=origin)
    assert status == 403 and "allowed_origins" in body, body  # a page on another local port is still a web page


async def test_configured_host_is_accepted(serve: Any) -> None:
    s: Served = await serve(allowed_hosts=["agents.internal:*"])
    status, body, _ = await post_init(s.url, Authorization=f"Bearer {TOKEN}", Host="agents.internal:8088")
    assert status == 200, body


async def test_disabled_endpoint_answers_404_and_other_routes_still_work(serve: Any) -> None:
    s: Served = await serve(enabled=False)
    status, body, _ = await post_init(s.url, Authorization=f"Bearer {TOKEN}")
    assert status == 404 and "not enabled" in body
    async with aiohttp.ClientSession() as http, http.get(s.base + "/health") as r:
        assert r.status == 200


async def test_reload_enables_and_disables_the_endpoint_and_applies_expose_at_once(serve: Any) -> None:
    s: Served = await serve(enabled=False)
    await s.engine.reload(endpoint_settings(expose=["book_table"]))
    async with mcp_client(s.url) as c:
        assert [t.name for t in (await c.list_tools()).tools] == ["book_table"]
        await s.engine.reload(endpoint_settings(expose=["book_table", "broken"]))
        assert [t.name for t in (await c.list_tools()).tools] == ["book_table", "broken"]
    await s.engine.reload(endpoint_settings(enabled=False))
    status, _, _ = await post_init(s.url, Authorization=f"Bearer {TOKEN}")
    assert status == 404


async def test_ready_is_503_until_the_engine_has_started() -> None:
    engine = Engine(endpoint_settings(), serve_http=True)
    http = next(c for c in engine.components if isinstance(c, HttpServer))
    await http.start()  # only the HTTP server: the engine is not ready yet
    try:
        async with httpx2.AsyncClient() as client:
            r = await client.get(f"{http.url}/ready")
            assert r.status_code == 503 and r.json()["ready"] is False
            mcp = await client.post(
                f"{http.url}/mcp", content=json.dumps(INIT), headers={**JSON_SSE, "Authorization": f"Bearer {TOKEN}"}
            )
            assert mcp.status_code == 503 and "starting" in mcp.text
    finally:
        await http.stop()
    async with engine:
        async with httpx2.AsyncClient() as client:
            r = await client.get(f"{engine.components[0].url}/ready")  # type: ignore[attr-defined]
            assert r.status_code == 200 and r.json() == {"ready": True}


async def test_reload_with_a_new_path_moves_the_endpoint(serve: Any) -> None:
    s: Served = await serve()
    await s.engine.reload(endpoint_settings(path="/agents/mcp"))
    http = next(c for c in s.engine.components if isinstance(c, HttpServer))
    async with mcp_client(f"{http.url}/agents/mcp") as c:
        assert "book_table" in [t.name for t in (await c.list_tools()).tools]
    status, _, _ = await post_init(f"{http.url}/mcp", Authorization=f"Bearer {TOKEN}")
    assert status == 404
