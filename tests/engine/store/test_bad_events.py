"""A lone surrogate (legal JSON: ``"\\ud800"``) never stops the engine's event writer, on a real redis-server.

It once reached an event through a tool call's arguments; the Redis writer's task died on it for the rest of the
process while /health still said connected. Now outside text is made valid where it enters, and an event that
still cannot be written is counted, logged once and skipped while the writer goes on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from aiohttp.test_utils import TestClient, TestServer

from engine.app import Engine
from engine.events import CallEnded, TranscriptAdded
from engine.http.app import build_app
from engine.store.base import call_stream
from tests.engine.store.redis_peer import RedisServer, eventually
from tests.engine.store.test_redis_store import engine_on, entries, store_of


async def _ended_in_stream(r: aioredis.Redis, call_id: str) -> list[dict[str, str]]:
    """The call's stream once its ``call.ended`` entry is there (every entry's JSON checked on the way)."""
    got: list[dict[str, str]] = []

    async def ended() -> bool:
        got[:] = await entries(r, call_stream("e1", call_id))
        return any(e["type"] == CallEnded.type for e in got)

    await eventually(ended, what="the call's call.ended entry in Redis (events written after the bad one)")
    for e in got:
        json.loads(e["event"])
    return got


async def _health(engine: Engine) -> dict[str, Any]:
    async with TestClient(TestServer(build_app(engine.http_backend()))) as client:
        r = await client.get("/health")
        assert r.status == 200
        body: dict[str, Any] = await r.json()
        return body


async def test_a_lone_surrogate_in_tool_arguments_is_replaced_and_every_later_event_is_written(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    engine = engine_on(tmp_path, redis_server.url)
    async with engine:
        call = await engine.start_call("c")
        await engine.user_said(call.call_id, "echo apples")  # a turn: the model is shown the echo tool
        # as a provider sends them: JSON text, legal, with a lone surrogate in a value and in a key
        value = await engine.execute_tool(call, "echo", '{"text": "a\\ud800b"}')
        key = await engine.execute_tool(call, "echo", '{"text": "k", "\\udfff": 1}')
        await engine.user_said(call.call_id, "echo pears")
        await engine.end_call(call.call_id, "done")
        got = await _ended_in_stream(r, call.call_id)
        assert value.status == "success" and value.message == "echo a\ufffdb"
        assert key.status == "rejected" and "\ufffd" in key.message
        assert "\ud800" not in json.dumps(key.message)
        completed = [json.loads(e["event"]) for e in got if e["type"] == "tool.completed"]
        assert [c["message"] for c in completed] == ["echo apples", "echo a\ufffdb", "echo pears"]
        health = await _health(engine)
        assert health["status"] == "ok" and health["store"]["connected"] is True
        assert engine.tasks.failures == 0 and "store:events" in engine.tasks.names()
    await r.aclose()


async def test_an_event_that_cannot_be_written_is_skipped_counted_and_the_writer_goes_on(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    engine = engine_on(tmp_path, redis_server.url)
    async with engine:
        call = await engine.start_call("c")
        # past every boundary (a part of the engine that made one itself): the writer must not die of it
        engine.bus.publish(TranscriptAdded(call_id=call.call_id, role="user", text="bad \ud800"))
        await engine.user_said(call.call_id, "echo apples")
        await engine.end_call(call.call_id, "done")
        got = await _ended_in_stream(r, call.call_id)
        said = [json.loads(e["event"])["text"] for e in got if e["type"] == "transcript.added"]
        assert "echo apples" in said and not any("bad" in t for t in said)
        assert store_of(engine).status()["skipped"] == 1
        metrics = engine.metrics.render().decode()
        assert 'ai_agent_events_skipped_total{consumer="store",reason="invalid_text"} 1.0' in metrics
        health = await _health(engine)
        assert health["status"] == "ok" and health["store"]["connected"] is True
        assert health["store"]["skipped"] == 1 and "store:events" in engine.tasks.names()
    await r.aclose()
