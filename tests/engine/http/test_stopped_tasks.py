"""A background task that stops is reported: ``/health`` says "degraded" and names it, and the console's event log
gets ``engine.error``. A writer that died used to leave /health saying "ok" (and the store "connected")."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from engine.app import Engine
from engine.config.models import Settings
from engine.events import EngineError
from engine.http.app import build_app


async def _health(engine: Engine) -> dict[str, Any]:
    async with TestClient(TestServer(build_app(engine.http_backend()))) as client:
        r = await client.get("/health")
        assert r.status == 200
        body: dict[str, Any] = await r.json()
        return body


async def test_health_names_a_background_task_that_stopped_and_why() -> None:
    engine = Engine(Settings.model_validate({"engine": {"http": {"enabled": False}}, "recording": {"enabled": False}}))
    async with engine:
        assert (await _health(engine))["status"] == "ok"
        sub = engine.bus.subscribe(types={EngineError.type})

        async def boom() -> None:
            raise RuntimeError("kaput \ud800")  # the reason itself may hold what broke the task

        engine.spawn(boom(), name="test:writer")
        event = await asyncio.wait_for(sub.get(), 10)
        assert isinstance(event, EngineError) and "test:writer" in event.message
        health = await _health(engine)
        assert health["status"] == "degraded"
        assert health["stopped"] == [{"task": "test:writer", "error": "RuntimeError: kaput \\ud800"}]
    await engine.start()  # started again: a fresh group, nothing stopped yet
    try:
        assert (await _health(engine))["status"] == "ok"
    finally:
        await engine.stop()
