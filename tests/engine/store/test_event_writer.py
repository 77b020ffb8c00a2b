"""The store's pipelined event writer on a real redis-server: batches sent back to back are written once each, in
order; a batch that fails inside Redis is never overtaken by the next one; a lost connection fails every unanswered
batch and nothing goes out again until the caller resets it (and sends from its oldest); and the engine's pump,
fed a burst while one call's stream refuses writes, loses and repeats nothing once the stream is fixed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from engine.events import EngineError, TranscriptAdded
from engine.store.base import StoredEvent, StoreUnavailable, call_stream, engine_stream
from engine.store.feed import EventFeed
from engine.store.redis_store import RedisStore
from engine.store.redis_writer import OUT_OF_ORDER
from tests.engine.store.redis_peer import RedisServer, eventually
from tests.engine.store.test_redis_store import engine_on, entries, store_of


def stored(seq: int, call_id: str | None = "c1") -> StoredEvent:
    event = {"type": "engine.error", "ts": 1.0, "message": f"event {seq}"}
    return StoredEvent(id=f"1000-{seq}", seq=seq, type="engine.error", call_id=call_id, event=json.dumps(event))


async def seqs(r: aioredis.Redis, stream: str) -> list[int]:
    return [int(e["seq"]) for e in await entries(r, stream)]


def test_a_batch_starts_after_the_newest_event_sent() -> None:
    feed = EventFeed(bound=5)
    feed.add([EngineError(message=f"m{i}") for i in range(4)])
    first = feed.batch(2)
    assert [e.seq for e in first] == [1, 2]
    assert [e.seq for e in feed.batch(10, after_seq=2)] == [3, 4]
    assert feed.batch(10, after_seq=4) == []
    feed.add([EngineError(message=f"m{i}") for i in range(4, 7)])  # over the bound: 1 and 2 are dropped
    assert [e.seq for e in feed.batch(10, after_seq=4)] == [5, 6, 7]
    assert [e.seq for e in feed.batch(10)] == [3, 4, 5, 6, 7]  # after a lost connection: from the oldest kept
    feed.written(first)  # the answer for a batch the bound pushed out meanwhile lets nothing else go
    assert len(feed.pending) == 5


async def test_batches_sent_back_to_back_land_once_each_in_order(redis_server: RedisServer) -> None:
    store = RedisStore(redis_server.url)
    await store.connect()
    answers = []
    for start in range(1, 40, 3):  # 13 batches, none waiting for the one before
        batch = [stored(s, call_id="c1" if s % 2 else None) for s in range(start, start + 3)]
        answers.append(await store.send_events("e", batch, 10_000))
    assert store._events.unanswered > 0  # really pipelined: answers still to come when the last one went out
    await asyncio.gather(*answers)
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    assert await seqs(r, engine_stream("e")) == list(range(1, 40))
    assert await seqs(r, call_stream("e", "c1")) == list(range(1, 40, 2))
    await store.append("e", [stored(s) for s in range(1, 40)], 10_000)  # all of it again: nothing twice
    assert await seqs(r, engine_stream("e")) == list(range(1, 40))
    await r.aclose()
    await store.close()


async def test_a_batch_that_failed_in_redis_is_not_overtaken(redis_server: RedisServer) -> None:
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    await r.set(call_stream("e", "bad"), "not a stream")  # XADD to it fails: WRONGTYPE
    store = RedisStore(redis_server.url)
    await store.connect()
    first = await store.send_events("e", [stored(1), stored(2, call_id="bad"), stored(3)], 10_000)
    second = await store.send_events("e", [stored(4), stored(5)], 10_000)
    with pytest.raises(StoreUnavailable, match="WRONGTYPE") as e1:
        await first
    with pytest.raises(StoreUnavailable, match="WRONGTYPE"):  # every unanswered batch fails with the first
        await second
    assert redis_server.url.split("@")[-1].split("/")[0] in str(e1.value)  # names the server
    # the call stream is written before the engine's: the failed event is not in the engine stream, nor anything
    # after it (the next batch refused, or never ran)
    assert await seqs(r, engine_stream("e")) == [1]
    with pytest.raises(StoreUnavailable, match="WRONGTYPE"):  # nothing goes out until reset
        await store.send_events("e", [stored(6)], 10_000)
    await r.delete(call_stream("e", "bad"))
    await store.connect()  # what the component does once the store is back: reset, then from the oldest
    await store.append("e", [stored(s, call_id="bad" if s == 2 else "c1") for s in range(1, 7)], 10_000)
    assert await seqs(r, engine_stream("e")) == [1, 2, 3, 4, 5, 6]
    assert await seqs(r, call_stream("e", "c1")) == [1, 3, 4, 5, 6]
    assert await seqs(r, call_stream("e", "bad")) == [2]
    await r.aclose()
    await store.close()


async def test_the_out_of_order_guard_refuses_a_batch_whose_predecessor_is_missing(
    redis_server: RedisServer,
) -> None:
    """The guard itself, without relying on timing: a batch naming an entry that is not there writes nothing."""
    store = RedisStore(redis_server.url)
    await store.connect()
    await store.append("e", [stored(1)], 10_000)
    link = store._events._link
    assert link is not None
    fake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    link.waiting.append((fake, "1000-7"))  # as if a batch ending at 1000-7 were out and unanswered
    refused = await store.send_events("e", [stored(8)], 10_000)  # so this one names 1000-7 as its predecessor
    with pytest.raises(StoreUnavailable, match=OUT_OF_ORDER):
        await refused
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    assert await seqs(r, engine_stream("e")) == [1]  # it wrote nothing
    await r.aclose()
    await store.close()


async def test_a_lost_connection_fails_every_unanswered_batch_until_reset(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    store = RedisStore(redis_server.url, timeout_s=1.0)
    await store.connect()
    await store.append("e", [stored(1)], 10_000)
    redis_server.kill()
    try:  # the socket may still take the batch; its answer never comes
        answer: asyncio.Future[None] | None = await store.send_events("e", [stored(2)], 10_000)
    except StoreUnavailable:
        answer = None
    if answer is not None:
        with pytest.raises(StoreUnavailable):
            await answer
    with pytest.raises(StoreUnavailable):  # and nothing goes out again before the caller resets
        await store.send_events("e", [stored(3)], 10_000)
    redis_server.start()
    await store.connect()
    await store.append("e", [stored(s) for s in range(2, 5)], 10_000)
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    assert await seqs(r, engine_stream("e")) == [2, 3, 4]  # a fresh Redis: only what was sent again
    await r.aclose()
    await store.close()


async def test_the_pump_loses_and_repeats_nothing_when_a_batch_fails_mid_burst(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    engine = engine_on(tmp_path, redis_server.url)
    store = store_of(engine)
    async with engine:
        engine.bus.publish(EngineError(message="probe"))
        await eventually(lambda: store.written > 0 and not store.feed.pending, what="the start written")
        await r.set(call_stream("e1", "trap"), "not a stream")
        for i in range(300):  # a burst: many batches out at once, one of them hits the trap
            engine.bus.publish(TranscriptAdded(call_id="trap" if i == 150 else "fine", role="user", text=f"t{i}"))
            if i % 7 == 0:
                await asyncio.sleep(0)
        await eventually(lambda: not store.connected, what="the store to see the failed batch")
        assert "WRONGTYPE" in store.last_error
        await r.delete(call_stream("e1", "trap"))
        await eventually(lambda: store.connected and not store.feed.pending, timeout=15, what="all written")
        got = await entries(r, engine_stream("e1"))
        numbers = [int(e["seq"]) for e in got]
        assert numbers == list(range(1, len(numbers) + 1))  # every event once, in order
        texts = [json.loads(e["event"]).get("text") for e in got if e["type"] == "transcript.added"]
        assert texts == [f"t{i}" for i in range(300)]
        trapped = await entries(r, call_stream("e1", "trap"))
        assert [json.loads(e["event"])["text"] for e in trapped] == ["t150"]
        assert store.feed.dropped == 0
    await r.aclose()
