"""The ``redis_server`` fixture: a real redis-server (``redis_peer``), skipped without one (CI fails on skips:
tests/peers/system-deps.sh installs it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.store.redis_peer import REDIS_SERVER, RedisServer


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (tests/peers/system-deps.sh installs it)")
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()
