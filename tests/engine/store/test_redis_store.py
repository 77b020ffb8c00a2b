"""The engine's store on a real redis-server: heartbeat, event streams, call state, Redis lost and back, start-up.

Every test runs a real ``Engine`` with ``engine.store: redis://…`` and reads Redis back with a separate client,
as a console on another machine would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from engine.app import Engine
from engine.events import EngineError
from engine.store.base import call_key, call_stream, engine_key, engine_stream
from engine.store.component import StoreComponent, StoreStartError
from tests.engine.core.helpers import echo_tool, settings_with
from tests.engine.store.redis_peer import RedisServer, eventually, free_port

ECHO = {
    "name": "echo",
    "patterns": [r"echo (?P<text>\w+)"],
    "tools": [{"name": "echo", "args": {"text": "{text}"}}],
    "reply": "I said {result}.",
}


def engine_on(tmp_path: Path, url: str, **engine: Any) -> Engine:
    cfg = {"store": url, "id": "e1", "heartbeat_s": 0.2, **engine}
    return Engine(settings_with(tmp_path, [ECHO], ["echo"], engine=cfg), extra_tools=[echo_tool()])


def store_of(engine: Engine) -> StoreComponent:
    return next(c for c in engine.components if isinstance(c, StoreComponent))


async def xrange(r: aioredis.Redis, stream: str, after: str = "-") -> list[tuple[str, dict[str, str]]]:
    rows: Any = await r.xrange(stream, min=after)
    return [(str(i), dict(f)) for i, f in rows]


async def entries(r: aioredis.Redis, stream: str, after: str = "-") -> list[dict[str, str]]:
    rows = await xrange(r, stream, after)
    return [dict(f) for _i, f in rows]


async def test_heartbeat_appears_while_running_and_is_gone_after_a_clean_stop(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    engine = engine_on(tmp_path, redis_server.url, max_calls=7)
    async with engine:
        raw = await r.get(engine_key("e1"))
        assert raw is not None
        beat = json.loads(raw)
        assert beat["id"] == "e1" and beat["contexts"] == ["c"] and beat["pid"] > 0 and beat["version"]
        assert beat["capacity"] == {"live_calls": 0, "max_calls": 7, "draining": False}
        assert 0 < await r.pttl(engine_key("e1")) <= 600  # three heartbeats of 0.2 s
        call = await engine.start_call("c")

        async def sees_call() -> bool:
            got = await r.get(engine_key("e1"))
            return got is not None and json.loads(got)["calls"] == [call.call_id]

        await eventually(sees_call, what="the heartbeat listing the live call")
    assert await r.get(engine_key("e1")) is None
    await r.aclose()


async def test_a_heartbeat_that_is_not_refreshed_expires(redis_server: RedisServer) -> None:
    from engine.store.redis_store import RedisStore

    store = RedisStore(redis_server.url)
    await store.connect()
    await store.register("gone", {"id": "gone"}, ttl_s=0.3, keep_s=10)
    assert "gone" in await store.engines()
    await eventually(lambda: _no_engine(store, "gone"), timeout=3, what="the heartbeat to expire")
    await store.close()


async def _no_engine(store: Any, engine_id: str) -> bool:
    return engine_id not in await store.engines()


async def test_a_calls_events_land_in_order_in_the_call_and_engine_streams(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    engine = engine_on(tmp_path, redis_server.url)
    sub = engine.bus.subscribe()
    async with engine:
        call = await engine.start_call("c")
        await engine.user_said(call.call_id, "echo apples")
        await engine.user_said(call.call_id, "echo pears")
        await engine.end_call(call.call_id, "done")
        published = [e for e in sub.drain() if getattr(e, "call_id", None) == call.call_id]
        want = [e.type for e in published if e.type != "softphone.level"]
        stream = call_stream("e1", call.call_id)

        async def all_there() -> bool:
            return len(await xrange(r, stream)) == len(want)

        await eventually(all_there, what="every event of the call in its stream")
    got = await entries(r, stream)
    assert [e["type"] for e in got] == want
    assert "tool.completed" in want and want[0] == "call.started" and want[-1] == "call.ended"
    assert json.loads(got[1]["event"])["type"] == got[1]["type"]
    assert [json.loads(e["event"])["ts"] for e in got] == [e.ts for e in published]
    everything = await entries(r, engine_stream("e1"))
    seqs = [int(e["seq"]) for e in everything]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # the engine's counter: no gap, no repeat
    assert [e["seq"] for e in everything if e["call_id"] == call.call_id] == [e["seq"] for e in got]
    # a reader catching up from any entry gets exactly the rest
    ids = [i for i, _f in await xrange(r, stream)]
    rest = await xrange(r, stream, "(" + ids[3])
    assert [f["type"] for _i, f in rest] == want[4:]
    await r.aclose()


async def test_the_call_hash_follows_the_call_and_expires_after_it_ended(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    engine = engine_on(tmp_path, redis_server.url, call_state_ttl_s=1.0)
    async with engine:
        call = await engine.start_call("c")
        await engine.user_said(call.call_id, "echo apples")
        engine.set_tier(call.call_id, "fast")
        key = call_key("e1", call.call_id)

        async def live_state() -> bool:
            h = await r.hgetall(key)
            return h.get("tier") == "fast" and h.get("turn") == "1"

        await eventually(live_state, what="the call's hash with its tier and turn")
        h = await r.hgetall(key)
        assert h["context"] == "c" and h["provider"] == "s" and h["state"] == "active" and h["engine"] == "e1"
        assert json.loads(h["tools_shown"]) == ["echo"]
        await engine.end_call(call.call_id, "done")

        async def ended() -> bool:
            return (await r.hgetall(key)).get("state") == "ended"

        await eventually(ended, what="the call's hash saying it ended")
        assert (await r.hgetall(key))["ended_reason"] == "done"
        assert 0 < await r.pttl(key) <= 1000
        assert 0 < await r.pttl(call_stream("e1", call.call_id)) <= 1000

        async def expired() -> bool:
            return not await r.exists(key, call_stream("e1", call.call_id))

        await eventually(expired, timeout=5, what="the ended call's hash and stream to expire")
    await r.aclose()


async def test_redis_lost_mid_call_loses_no_event_within_the_buffer(tmp_path: Path, redis_server: RedisServer) -> None:
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    engine = engine_on(tmp_path, redis_server.url)
    store = store_of(engine)
    async with engine:
        call = await engine.start_call("c")
        await eventually(lambda: not store.feed.pending and store.written > 0, what="the greeting written")
        before = store.written
        redis_server.kill()
        for word in ("apples", "pears", "plums"):  # the call goes on while Redis is away
            assert "I said" in (await engine.user_said(call.call_id, f"echo {word}")).text
        await eventually(lambda: not store.connected, what="the store to notice Redis is gone")
        assert len(store.feed.pending) > 0
        redis_server.start()  # empty: no persistence, so only what the engine kept can be there
        await eventually(lambda: store.connected and not store.feed.pending, what="the buffer written")
        await r.aclose()
        r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
        got = await entries(r, call_stream("e1", call.call_id))
        assert [e["type"] for e in got].count("tool.completed") == 3
        seqs = [int(e["seq"]) for e in await entries(r, engine_stream("e1"))]
        assert seqs == list(range(before + 1, before + 1 + len(seqs)))  # every event since the loss, in order
        assert store.feed.dropped == 0 and store.reconnects == 1
        assert await r.get(engine_key("e1")) is not None  # registered again at once
    await r.aclose()


async def test_past_the_buffer_the_oldest_events_are_dropped_and_counted(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    engine = engine_on(tmp_path, redis_server.url, store_buffer=100)
    store = store_of(engine)
    async with engine:
        await eventually(lambda: store.written > 0 or not store.feed.pending, what="the start written")
        redis_server.kill()
        engine.bus.publish(EngineError(message="probe"))
        await eventually(lambda: not store.connected, what="the store to notice Redis is gone")
        for i in range(150):
            engine.bus.publish(EngineError(message=f"while away {i}"))
        await eventually(lambda: store.feed.dropped >= 51, what="the drops")
        assert store.status()["dropped"] == store.feed.dropped
        text = engine.metrics.render().decode()
        assert f"ai_agent_store_events_dropped_total {float(store.feed.dropped)}" in text
        assert "ai_agent_store_connected 0.0" in text
        redis_server.start()
        await eventually(lambda: store.connected and not store.feed.pending, what="the buffer written")
        r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
        got = await entries(r, engine_stream("e1"))
        messages = [json.loads(e["event"]).get("message") for e in got]
        assert messages[:100] == [f"while away {i}" for i in range(50, 150)]  # the newest 100, in order
        await r.aclose()


async def test_unreachable_at_start_refuses_when_the_store_is_required(tmp_path: Path) -> None:
    url = f"redis://:hunter2secret@127.0.0.1:{free_port()}/0"
    engine = engine_on(tmp_path, url, store_required=True)
    with pytest.raises(StoreStartError) as e:
        await engine.start()
    text = str(e.value)
    assert "engine.store_required" in text and "127.0.0.1" in text and "hunter2secret" not in text
    assert "***" in text
    assert not engine.started


async def test_unreachable_at_start_runs_standalone_and_catches_up_when_redis_comes(tmp_path: Path) -> None:
    from tests.engine.store.redis_peer import REDIS_SERVER

    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (tests/peers/system-deps.sh installs it)")
    server = RedisServer(tmp_path)
    engine = engine_on(tmp_path, server.url, store_required=False)
    store = store_of(engine)
    try:
        async with engine:
            assert not store.connected and "connecting failed" in store.status()["last_error"]  # /health says why
            call = await engine.start_call("c")  # calls work without the store
            await engine.user_said(call.call_id, "echo apples")
            server.start()
            r = aioredis.from_url(server.url, decode_responses=True, socket_timeout=5)

            async def caught_up() -> bool:  # the buffer empty is not enough: the pump may not have taken them all
                types = [e["type"] for e in await entries(r, call_stream("e1", call.call_id))]
                return store.connected and "turn.timings" in types

            await eventually(caught_up, timeout=15, what="catching up")
            types = [e["type"] for e in await entries(r, call_stream("e1", call.call_id))]
            assert types[0] == "call.started" and "tool.completed" in types
            assert await r.get(engine_key("e1")) is not None
            await r.aclose()
    finally:
        server.kill()


async def test_a_fixed_engine_id_continues_its_stream_after_a_restart(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    for _ in range(2):
        engine = engine_on(tmp_path, redis_server.url)
        async with engine:
            call = await engine.start_call("c")
            await engine.end_call(call.call_id)
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    rows = await xrange(r, engine_stream("e1"))
    assert [f["type"] for _i, f in rows].count("call.started") == 2
    await r.aclose()


async def test_the_default_memory_store_publishes_nothing(tmp_path: Path) -> None:
    """One engine with its console in-process shares nothing: no subscription, so unwatched events stay unbuilt."""
    engine = engine_on(tmp_path, "memory")
    store = store_of(engine)
    async with engine:
        call = await engine.start_call("c")
        await engine.user_said(call.call_id, "echo apples")
        assert store.store is None and store.written == 0 and not store.feed.pending
        assert store._sub is None and store._tasks == []  # no subscription (no per-event cost), no tasks
        assert store.status()["store"] == "memory" and store.status()["connected"] is False
