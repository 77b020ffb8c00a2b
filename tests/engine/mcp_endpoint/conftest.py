"""Fixtures for the engine's own MCP endpoint tests (helpers live in mcp_endpoint_helpers.py beside this file)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

HERE = str(Path(__file__).resolve().parent)
#: The conformance fixtures' MCP server (upstream.py) is the server behind the endpoint in test_proxy.py.
CONFORMANCE = str(Path(__file__).resolve().parents[2] / "conformance")
for folder in (CONFORMANCE, HERE):
    if folder not in sys.path:
        sys.path.insert(0, folder)

from mcp_endpoint_helpers import Calls, Served, endpoint_settings, make_tools  # noqa: E402

from engine.app import Engine  # noqa: E402
from engine.http.server import HttpServer  # noqa: E402


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Awaitable[Served]]]:
    """``await serve(**mcp_server_overrides)`` → a started engine serving /mcp; stopped after the test."""
    engines: list[Engine] = []

    async def factory(**mcp: Any) -> Served:
        calls = Calls()
        engine = Engine(endpoint_settings(**mcp), extra_tools=make_tools(calls), serve_http=True)
        engines.append(engine)
        await engine.start()
        http = next(c for c in engine.components if isinstance(c, HttpServer))
        base = str(http.url)
        return Served(engine, base + engine.settings.engine.mcp_server.path, base, calls)

    yield factory
    for e in engines:
        await e.stop()
