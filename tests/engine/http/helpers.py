"""Helpers for the HTTP API tests: a started engine serving HTTP on port 0, and raw requests with any headers."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from engine.app import Engine
from engine.http.server import HttpServer

FIXTURE_SERVER = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_servers" / "fixture_server.py")
TOKEN = "http-test-token-4b1e"
JSON = {"Content-Type": "application/json"}
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def fixture_server(*flags: str) -> dict[str, Any]:
    """A configured stdio server running tests/fixtures/mcp_servers/fixture_server.py."""
    return {"transport": "stdio", "command": [sys.executable, FIXTURE_SERVER, *flags]}


@dataclass
class Api:
    engine: Engine
    base: str

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])


@dataclass
class Answer:
    status: int
    text: str

    def json(self) -> Any:
        import json

        return json.loads(self.text)


async def send(
    method: str, url: str, *, headers: dict[str, str] | None = None, data: bytes | str | None = None
) -> Answer:
    """One request with exactly these headers (aiohttp keeps an explicit Host)."""
    async with aiohttp.ClientSession() as client:
        async with client.request(method, url, headers=headers or {}, data=data) as r:
            return Answer(r.status, await r.text())


def http_of(engine: Engine) -> HttpServer:
    return next(c for c in engine.components if isinstance(c, HttpServer))
