"""The Redis store (``engine.store: redis://…`` or ``rediss://…``), on redis-py's asyncio client.

Why it exists: Redis is the shared place many engines write to and consoles read from (Streams for events, a
hash per live call, a key with a TTL per engine). This module maps the store's operations onto Redis commands
and every failure onto ``StoreUnavailable`` naming the server (never the password); retrying and buffering are
the component's job, so the client itself does not retry (a lost Redis must not stall the event pump for long).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError, ResponseError

from engine.config.models.scale_out import safe_store_url
from engine.store.base import Entry, StoredEvent, StoreUnavailable, call_key, call_stream, engine_key, engine_stream

#: What Redis answers to an XADD whose explicit id is not above the stream's newest: the entry is there already.
_ALREADY_WRITTEN = "equal or smaller than the target stream top item"


class RedisStore:
    def __init__(self, url: str, *, timeout_s: float = 2.0) -> None:
        self.description = safe_store_url(url)
        self._client: aioredis.Redis = aioredis.from_url(
            url,
            decode_responses=True,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
        )

    def _fail(self, what: str, e: BaseException) -> NoReturn:
        raise StoreUnavailable(f"Redis at {self.description}: {what} failed: {type(e).__name__}: {e}") from None

    async def connect(self) -> None:
        try:
            await self._client.ping()
        except (RedisError, OSError) as e:
            self._fail("connecting", e)

    async def close(self) -> None:
        try:
            await self._client.aclose()
        except (RedisError, OSError):
            pass  # closing a connection to a server that is gone

    async def last_entry_id(self, engine_id: str) -> str | None:
        try:
            newest = await self._client.xrevrange(engine_stream(engine_id), count=1)
        except (RedisError, OSError) as e:
            self._fail("reading the engine's stream", e)
        return str(newest[0][0]) if newest else None

    async def register(self, engine_id: str, info: Mapping[str, Any], ttl_s: float, keep_s: float) -> None:
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.set(engine_key(engine_id), json.dumps(dict(info)), px=max(1, int(ttl_s * 1000)))
                pipe.pexpire(engine_stream(engine_id), max(1, int(keep_s * 1000)))
                await pipe.execute()
        except (RedisError, OSError) as e:
            self._fail("the heartbeat", e)

    async def unregister(self, engine_id: str) -> None:
        try:
            await self._client.delete(engine_key(engine_id))
        except (RedisError, OSError) as e:
            self._fail("unregistering", e)

    async def append(self, engine_id: str, events: Sequence[StoredEvent], maxlen: int) -> None:
        if not events:
            return
        own = engine_stream(engine_id)
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                for ev in events:
                    fields: dict[Any, Any] = ev.fields()
                    pipe.xadd(own, fields, id=ev.id, maxlen=maxlen, approximate=True)
                    if ev.call_id:
                        pipe.xadd(call_stream(engine_id, ev.call_id), fields, id=ev.id, maxlen=maxlen,
                                  approximate=True)  # fmt: skip
                results = await pipe.execute(raise_on_error=False)
        except (RedisError, OSError) as e:
            self._fail("writing events", e)
        for r in results:
            if isinstance(r, ResponseError) and _ALREADY_WRITTEN in str(r):
                continue  # the same batch again after a lost reply
            if isinstance(r, BaseException):
                self._fail("writing events", r)

    async def put_call(self, engine_id: str, call_id: str, state: Mapping[str, str], ttl_s: float) -> None:
        ms = max(1, int(ttl_s * 1000))
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                mapping: dict[Any, Any] = dict(state)
                pipe.hset(call_key(engine_id, call_id), mapping=mapping)
                pipe.pexpire(call_key(engine_id, call_id), ms)
                pipe.pexpire(call_stream(engine_id, call_id), ms)
                await pipe.execute()
        except (RedisError, OSError) as e:
            self._fail(f"writing the state of call {call_id}", e)

    async def read(self, stream: str, after: str = "0", count: int = 1000) -> list[Entry]:
        try:
            rows: Any = await self._client.xrange(stream, min=f"({after}" if after != "0" else "-", count=count)
        except (RedisError, OSError) as e:
            self._fail(f"reading {stream}", e)
        return [(str(i), {str(k): str(v) for k, v in f.items()}) for i, f in rows or ()]

    async def engines(self) -> dict[str, dict[str, Any]]:
        prefix = engine_key("")
        try:
            keys = [k async for k in self._client.scan_iter(match=prefix + "*", count=500)]
            values = await self._client.mget(keys) if keys else []
        except (RedisError, OSError) as e:
            self._fail("listing engines", e)
        return {k[len(prefix) :]: json.loads(v) for k, v in zip(keys, values, strict=True) if v is not None}

    async def call_state(self, engine_id: str, call_id: str) -> dict[str, str]:
        try:
            found: Any = await self._client.hgetall(call_key(engine_id, call_id))
        except (RedisError, OSError) as e:
            self._fail(f"reading the state of call {call_id}", e)
        return {str(k): str(v) for k, v in found.items()}
