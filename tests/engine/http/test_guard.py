"""Host and Origin are checked first on every route of the HTTP API, the engine's own /mcp endpoint included."""

from __future__ import annotations

import json

import pytest

from engine.http.guard import host_allowed, origin_allowed, same_origin, split_host
from tests.engine.http.conftest import ApiFactory
from tests.engine.http.helpers import AUTH, JSON, TOKEN, send

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP = {**JSON, "Accept": "application/json, text/event-stream"}
ROUTES = [
    ("GET", "/health", None),
    ("GET", "/ready", None),
    ("GET", "/metrics", None),
    ("GET", "/mcp/status", None),
    ("POST", "/mcp/test/x", None),
    ("POST", "/mcp", json.dumps(INIT)),
    ("GET", "/no/such/route", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[p for _, p, _ in ROUTES])
@pytest.mark.parametrize("token", [None, TOKEN], ids=["no-token", "token"])
async def test_every_route_refuses_a_foreign_host(
    api: ApiFactory, method: str, path: str, body: str | None, token: str | None
) -> None:
    a = await api(http={"auth_token": token} if token else {}, mcp_server={"enabled": True})
    headers = {**MCP, **AUTH} if token else dict(MCP)
    ok = await send(method, a.base + path, headers=headers, data=body)
    assert ok.status != 421, ok.text  # the loopback Host aiohttp sends is served
    got = await send(method, a.base + path, headers={**headers, "Host": f"rebind.example:{a.port}"}, data=body)
    assert got.status == 421, got.text
    assert "engine.http.allowed_hosts" in got.json()["error"]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[p for _, p, _ in ROUTES])
async def test_every_route_refuses_a_browser_origin(api: ApiFactory, method: str, path: str, body: str | None) -> None:
    a = await api(mcp_server={"enabled": True})
    for origin in ("http://evil.example", f"http://127.0.0.1:{a.port + 1}", f"http://localhost:{a.port}", "null"):
        got = await send(method, a.base + path, headers={**MCP, "Origin": origin}, data=body)
        assert got.status == 403, (origin, got.text)
        assert got.json()["key"] == "engine.http.allowed_origins"


async def test_listed_hosts_and_origins_are_served(api: ApiFactory) -> None:
    a = await api(http={"allowed_hosts": ["ava.lan"], "allowed_origins": ["https://ui.example", "http://localhost:*"]})
    for headers in (
        {"Host": "ava.lan:8088"},
        {"Host": "AVA.LAN"},
        {"Origin": "https://ui.example"},
        {"Origin": "http://localhost:5173"},
        {"Host": f"localhost:{a.port}"},
        {"Host": f"[::1]:{a.port}"},
    ):
        got = await send("GET", f"{a.base}/mcp/status", headers=headers)
        assert got.status == 200, (headers, got.text)
    got = await send("GET", f"{a.base}/mcp/status", headers={"Origin": "https://ui.example.evil"})
    assert got.status == 403


async def test_the_mcp_endpoint_keys_admit_hosts_on_that_path_only(api: ApiFactory) -> None:
    a = await api(mcp_server={"enabled": True, "allowed_hosts": ["agents.internal:*"]})
    host = {"Host": "agents.internal:8088"}
    got = await send("POST", f"{a.base}/mcp", headers={**MCP, **host}, data=json.dumps(INIT))
    assert got.status == 200, got.text
    got = await send("GET", f"{a.base}/mcp/status", headers=host)
    assert got.status == 421 and "engine.http.allowed_hosts" in got.text


async def test_state_changing_routes_require_the_token_when_one_is_set(api: ApiFactory) -> None:
    a = await api(http={"auth_token": TOKEN}, servers={})
    got = await send("POST", f"{a.base}/mcp/test/x", headers=JSON, data="{}")
    assert got.status == 401 and got.json()["key"] == "engine.http.auth_token"
    got = await send("POST", f"{a.base}/health", headers=JSON, data="{}")  # probes are open for GET only
    assert got.status == 401
    got = await send("GET", f"{a.base}/health")
    assert got.status == 200


def test_host_matching() -> None:
    assert split_host("[::1]:8088") == ("::1", "8088")
    assert split_host("Example.ORG") == ("example.org", None)
    assert host_allowed("127.0.0.1:1", "127.0.0.1", [])
    assert host_allowed("127.5.0.1", "127.0.0.1", [])
    assert not host_allowed("127.0.0.1.evil.example", "127.0.0.1", [])
    assert not host_allowed("localhost.evil.example:80", "127.0.0.1", [])
    assert host_allowed("10.0.0.5:8088", "10.0.0.5", [])  # the bound address itself
    assert not host_allowed("0.0.0.0:8088", "0.0.0.0", [])  # a wildcard bind admits nothing by itself
    assert host_allowed("ava.lan:9", "0.0.0.0", ["ava.lan:*"])
    assert host_allowed("ava.lan:8088", "0.0.0.0", ["ava.lan:8088"])
    assert not host_allowed("ava.lan:9", "0.0.0.0", ["ava.lan:8088"])
    assert not host_allowed("", "127.0.0.1", [])


def test_origin_matching() -> None:
    assert origin_allowed("https://ui.example", ["https://ui.example"])
    assert origin_allowed("https://UI.example/", ["https://ui.example"])
    assert not origin_allowed("http://ui.example", ["https://ui.example"])
    assert origin_allowed("http://h:3000", ["http://h:*"])
    assert not origin_allowed("http://h.evil:3000", ["http://h:*"])
    assert not origin_allowed("http://h:3000@evil", ["http://h:*"])
    assert not origin_allowed("null", [])


async def test_engine_http_keys_admit_hosts_and_origins_on_the_mcp_endpoint_too(api: ApiFactory) -> None:
    a = await api(
        mcp_server={"enabled": True}, http={"allowed_hosts": ["ava.lan"], "allowed_origins": ["https://ui.example"]}
    )
    for extra in ({"Host": "ava.lan:8088"}, {"Origin": "https://ui.example"}):
        got = await send("POST", f"{a.base}/mcp", headers={**MCP, **extra}, data=json.dumps(INIT))
        assert got.status == 200, (extra, got.text)  # the guard and the MCP SDK's own check agree
    await a.engine.reload(a.engine.settings.model_copy(deep=True))  # a reload keeps them
    got = await send("POST", f"{a.base}/mcp", headers={**MCP, "Host": "ava.lan"}, data=json.dumps(INIT))
    assert got.status == 200, got.text


async def test_a_same_origin_request_is_served(api: ApiFactory) -> None:
    """Origin equal to the request's own Host: only a page served from this very port carries it."""
    a = await api(mcp_server={"enabled": True})
    for path, body in (("/mcp/status", None), ("/mcp", json.dumps(INIT))):
        got = await send("POST" if body else "GET", a.base + path, headers={**MCP, "Origin": a.base}, data=body)
        assert got.status == 200, got.text


def test_same_origin_matching() -> None:
    assert same_origin("http://127.0.0.1:8088", "127.0.0.1:8088")
    assert not same_origin("http://127.0.0.1:8089", "127.0.0.1:8088")
    assert not same_origin("http://127.0.0.1:8088", None)
    assert not same_origin("ftp://127.0.0.1:8088", "127.0.0.1:8088")
    assert not same_origin("null", "null")
