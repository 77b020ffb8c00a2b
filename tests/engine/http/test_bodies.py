"""Deeply nested or oversized JSON bodies are 400/413 with a clear message, never a 500 (/mcp/test and /mcp)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import aiohttp
import pytest

from engine.http.body import BodyError, nesting_exceeds, parse_json
from tests.engine.http.conftest import ApiFactory
from tests.engine.http.helpers import AUTH, JSON, TOKEN, send

MCP = {**JSON, **AUTH, "Accept": "application/json, text/event-stream"}
DEEP = "[" * 100_000 + "]" * 100_000
TWO_MB = json.dumps({"command": ["x"], "pad": "a" * (2 * 1024 * 1024)})


async def chunks(data: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def send_chunked(url: str, headers: dict[str, str], data: bytes) -> tuple[int, str]:
    """A body without Content-Length (chunked transfer encoding): the limit must hold while reading."""
    async with aiohttp.ClientSession() as client:
        async with client.post(url, headers=headers, data=chunks(data)) as r:
            return r.status, await r.text()


@pytest.mark.parametrize("path", ["/mcp/test/x", "/mcp"])
@pytest.mark.parametrize(
    "deep", [DEEP, '{"a":' * 100_000 + "1" + "}" * 100_000, "[" * 1_000_000], ids=["arrays", "objects", "unclosed"]
)
async def test_deep_json_is_400(api: ApiFactory, path: str, deep: str) -> None:
    a = await api(http={"auth_token": TOKEN}, mcp_server={"enabled": True})
    got = await send("POST", a.base + path, headers=MCP, data=deep)
    assert got.status == 400, got.text[:300]
    if path == "/mcp/test/x":
        assert got.json()["error"] == "the JSON body is nested deeper than 64 levels"


@pytest.mark.parametrize("path", ["/mcp/test/x", "/mcp"])
async def test_a_two_megabyte_body_is_413_before_it_is_read(api: ApiFactory, path: str) -> None:
    a = await api(http={"auth_token": TOKEN}, mcp_server={"enabled": True})
    got = await send("POST", a.base + path, headers=MCP, data=TWO_MB)
    assert got.status == 413, got.text[:300]
    body = got.json()
    assert body["key"] == "engine.http.max_body_bytes" and "the limit is 1048576 bytes" in body["error"]


@pytest.mark.parametrize("path", ["/mcp/test/x", "/mcp"])
async def test_a_two_megabyte_chunked_body_is_413(api: ApiFactory, path: str) -> None:
    a = await api(http={"auth_token": TOKEN}, mcp_server={"enabled": True})
    status, text = await send_chunked(a.base + path, MCP, TWO_MB.encode())
    assert status == 413, text[:300]
    assert json.loads(text)["key"] == "engine.http.max_body_bytes"
    ok = await send("GET", f"{a.base}/health")  # the server is fine afterwards
    assert ok.status == 200


async def test_the_limit_is_the_configured_one(api: ApiFactory) -> None:
    a = await api(http={"auth_token": TOKEN, "max_body_bytes": 100})
    got = await send("POST", f"{a.base}/mcp/test/x", headers=MCP, data=json.dumps({"pad": "a" * 200}))
    assert got.status == 413 and "the limit is 100 bytes" in got.json()["error"]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{", "the body is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2"),
        (b"\xff{}", "the body is not UTF-8 text (bad byte at offset 0)"),
        (b"[" * 65 + b"]" * 65, "the JSON body is nested deeper than 64 levels"),
    ],
)
def test_parse_json_refusals(raw: bytes, message: str) -> None:
    with pytest.raises(BodyError) as err:
        parse_json(raw)
    assert err.value.status == 400 and err.value.message.startswith(message)


def test_nesting_scan_ignores_brackets_in_strings() -> None:
    assert not nesting_exceeds(json.dumps({"a": "[" * 1000, "b": ["{" * 500]}), 64)
    assert not nesting_exceeds(json.dumps(['\\"[[[[' * 100]), 3)
    assert nesting_exceeds("[" * 65 + "]" * 65, 64)
    assert not nesting_exceeds("[" * 64 + "]" * 64, 64)
    assert parse_json(b"[" * 64 + b"]" * 64) is not None


async def test_deep_json_on_the_stateless_mcp_path_is_400(api: ApiFactory) -> None:
    a = await api(http={"auth_token": TOKEN}, mcp_server={"enabled": True})
    modern = {**MCP, "MCP-Protocol-Version": "2026-07-28"}
    got = await send("POST", f"{a.base}/mcp", headers=modern, data=DEEP)
    assert got.status == 400 and "Parse error" in got.text, got.text[:300]
