"""Fixtures for the HTTP API tests: ``await api(http=..., servers=..., mcp_server=...)`` → a started engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import keyring
import pytest

from engine.app import Engine
from engine.config.models import Settings
from tests.engine.http.helpers import Api, http_of
from tests.fixtures.memory_keyring import MemoryKeyring

ApiFactory = Callable[..., Awaitable[Api]]


@pytest.fixture
async def api() -> AsyncIterator[ApiFactory]:
    engines: list[Engine] = []

    async def factory(
        http: dict[str, Any] | None = None,
        servers: dict[str, Any] | None = None,
        mcp_server: dict[str, Any] | None = None,
    ) -> Api:
        settings = Settings.model_validate(
            {
                "engine": {"http": {"port": 0, **(http or {})}, "mcp_server": mcp_server or {}},
                "mcp": {"servers": servers or {}},
            }
        )
        engine = Engine(settings, serve_http=True)
        engines.append(engine)
        await engine.start()
        return Api(engine, str(http_of(engine).url))

    yield factory
    for engine in engines:
        await engine.stop()


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)
