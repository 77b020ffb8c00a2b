"""A call's state hash is written whole at first, after a reconnect and every ``FULL_STATE_S``; in between a write
sends only the fields that changed (a turn changes one or two of a dozen), and a heartbeat only keeps it alive."""

from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis

from engine.events import CallStarted, TierChanged
from engine.store.base import call_key
from engine.store.feed import CallStates
from tests.engine.store.redis_peer import RedisServer, eventually
from tests.engine.store.test_redis_store import engine_on, store_of


def test_to_write_sends_what_changed_since_the_last_write() -> None:
    states = CallStates()
    states.follow([CallStarted(call_id="c1", context="ctx", provider="p", tier="standard")])
    first = states.to_write(["c1", "gone"], {"engine": "e"}, full=False)
    assert set(first) == {"c1"} and first["c1"]["context"] == "ctx" and first["c1"]["engine"] == "e"
    states.wrote(first)
    assert states.to_write(["c1"], {"engine": "e"}, full=False) == {"c1": {}}  # nothing new: only kept alive
    states.follow([TierChanged(call_id="c1", old="standard", new="fast", reason="test")])
    assert states.to_write(["c1"], {"engine": "e"}, full=False) == {"c1": {"tier": "fast"}}
    assert states.to_write(["c1"], {"engine": "e"}, full=True)["c1"] == {**first["c1"], "tier": "fast"}
    states.forget("c1")
    assert states.written == {}


async def test_turns_write_only_their_fields_and_a_full_write_heals_the_hash(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    engine = engine_on(tmp_path, redis_server.url)
    store = store_of(engine)
    async with engine:
        call = await engine.start_call("c")
        key = call_key("e1", call.call_id)

        async def has(field: str, value: str | None = None) -> bool:
            got = await r.hget(key, field)
            return got is not None and (value is None or got == value)

        async def ttl_above(ms: int) -> bool:
            return bool(await r.pttl(key) > ms)

        await eventually(lambda: has("context", "c"), what="the call's first, whole write")
        await r.hdel(key, "context")  # lost behind the engine's back
        await engine.user_said(call.call_id, "echo apples")
        await eventually(lambda: has("turn", "1"), what="the turn's write")
        await engine.user_said(call.call_id, "echo pears")
        await eventually(lambda: has("turn", "2"), what="the next turn's write")
        for _ in range(2):  # two heartbeats came and went: each writes the call's changed fields, then its TTL
            # Shortened behind the engine's back, so only a heartbeat's refresh (300 s) lifts it again; comparing
            # with the TTL read after the last write missed every refresh when that read came in the write's ms.
            await r.pexpire(key, 60_000)
            await eventually(lambda: ttl_above(60_000), what="a heartbeat refreshing the hash's TTL")
        assert not await has("context")  # only changed fields went out: the lost one stays lost
        assert 0 < await r.pttl(key)  # but the hash is kept alive
        store._full_due = 0.0  # what a reconnect does, and what FULL_STATE_S does
        await eventually(lambda: has("context", "c"), what="the whole hash written again")
    await r.aclose()
