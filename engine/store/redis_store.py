"""The Redis store (``engine.store: redis://…`` or ``rediss://…``), on redis-py's asyncio client.

Why it exists: Redis is the shared place many engines write to and consoles read from (Streams for events, a
hash per live call, a key with a TTL per engine). This module maps the store's operations onto Redis commands
and every failure onto ``StoreUnavailable`` naming the server (never the password); retrying and buffering are
the component's job, so the client itself does not retry (a lost Redis must not stall the event pump for long).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import redis.asyncio as aioredis
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from engine.config.models.scale_out import safe_store_url
from engine.store.base import (
    Entry,
    StoredEvent,
    StoreUnavailable,
    approver_key,
    call_key,
    call_stream,
    engine_key,
    engine_stream,
)
from engine.store.redis_writer import EventWriter, own_connection

#: Calls' state hashes in one command: KEYS holds (hash, stream) per call; ARGV[1] is the TTL in ms, then per call
#: the number of fields and the field/value pairs. Each hash is written and both keys expire after the TTL.
_PUT_CALLS_LUA = """
local ttl, a = ARGV[1], 2
for k = 1, #KEYS, 2 do
  local n = tonumber(ARGV[a])
  local fields = {}
  for j = 1, 2 * n do fields[j] = ARGV[a + j] end
  if n > 0 then redis.call('HSET', KEYS[k], unpack(fields)) end
  redis.call('PEXPIRE', KEYS[k], ttl)
  redis.call('PEXPIRE', KEYS[k + 1], ttl)
  a = a + 1 + 2 * n
end
return #KEYS / 2
"""


def redis_client(url: str, timeout_s: float | None = 2.0, connect_timeout_s: float = 2.0) -> aioredis.Redis:
    """The one way the engine opens Redis: text replies, bounded waits, no silent retry (callers retry with their
    own backoff). ``timeout_s`` must exceed any blocking command's wait (None: no socket timeout)."""
    return aioredis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout_s,
        socket_connect_timeout=connect_timeout_s,
        retry=Retry(NoBackoff(), 0),
    )


def raise_if_cancelled() -> None:
    """redis-py's asyncio client can swallow a cancel that lands while a blocking read is torn down (the command
    then just returns): a loop around a blocking read calls this after each one, or it would never stop."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class RedisStore:
    def __init__(self, url: str, *, timeout_s: float = 2.0) -> None:
        self.description = safe_store_url(url)
        self._client: aioredis.Redis = redis_client(url, timeout_s, timeout_s)
        # events: one EVALSHA per batch, whatever its size, sent without waiting for the answer to the one before
        self._events = EventWriter(self._client, self.description, timeout_s)
        self._timeout_s = timeout_s
        #: ``read_many``'s connection (a follower's hot path: the pool's bookkeeping per read cost more than the
        #: read); dropped after any failure or cancel, since an unread answer may still be on its way.
        self._follower: AbstractConnection | None = None
        self._put_calls = self._client.register_script(_PUT_CALLS_LUA)

    def _fail(self, what: str, e: BaseException) -> NoReturn:
        raise StoreUnavailable(f"Redis at {self.description}: {what} failed: {type(e).__name__}: {e}") from None

    async def connect(self) -> None:
        try:
            # (re)connecting: drop every pooled connection first — after a Redis restart each stale one would fail
            # once more, and each failure costs the caller another backoff round
            await self._events.reset()
            await self._drop_follower()
            await self._client.connection_pool.disconnect()
            await self._client.ping()
        except (RedisError, OSError) as e:
            self._fail("connecting", e)

    async def close(self) -> None:
        await self._events.close()
        await self._drop_follower()
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
        if events:
            await (await self.send_events(engine_id, events, maxlen))

    async def send_events(self, engine_id: str, events: Sequence[StoredEvent], maxlen: int) -> asyncio.Future[None]:
        if not events:
            raise ValueError("send_events: no events")
        keys = [engine_stream(engine_id)]
        slot: dict[str, int] = {}
        args: list[Any] = [maxlen]
        for ev in events:
            k = 0
            if ev.call_id:
                k = slot.get(ev.call_id, 0)
                if not k:
                    keys.append(call_stream(engine_id, ev.call_id))
                    k = slot[ev.call_id] = len(keys)
            args += [ev.id, k, ev.seq, ev.type, ev.call_id or "", ev.event]
        return await self._events.send(keys, args, events[-1].id)

    async def put_calls(self, engine_id: str, states: Mapping[str, Mapping[str, str]], ttl_s: float) -> None:
        if not states:
            return
        keys: list[str] = []
        args: list[Any] = [max(1, int(ttl_s * 1000))]
        for call_id, state in states.items():
            keys += [call_key(engine_id, call_id), call_stream(engine_id, call_id)]
            args.append(len(state))
            for k, v in state.items():
                args += [k, v]
        try:
            await self._put_calls(keys=keys, args=args)
        except (RedisError, OSError) as e:
            self._fail(f"writing the state of {len(states)} call(s)", e)

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

    async def read_many(
        self, after: Mapping[str, str], block_ms: int, count: int = 1000
    ) -> list[tuple[str, list[Entry]]]:
        """New entries of several streams (each after its entry id), waiting up to ``block_ms`` for the first one
        (a reader following many engines), on a connection of its own; ``block_ms`` must stay below ``timeout_s``."""
        if not after:
            return []
        conn = self._follower
        try:
            if conn is None:
                conn = self._follower = own_connection(self._client)
                await conn.connect()
            command: list[str | int] = ["XREAD", "COUNT", count, "BLOCK", max(1, block_ms), "STREAMS", *after]
            command += after.values()
            async with asyncio.timeout(self._timeout_s):
                await conn.send_packed_command(conn.pack_command(*command), check_health=False)
                rows: Any = await conn.read_response()
        except BaseException as e:  # a cancel too: the answer may still come, on a connection nobody reads
            await self._drop_follower()
            if isinstance(e, RedisError | OSError | TimeoutError):
                self._fail("reading the engines' streams", e)
            raise
        raise_if_cancelled()
        # RESP3 answers a map of stream → entries, RESP2 a list of [stream, entries]; an entry's fields are flat
        streams = rows.items() if isinstance(rows, dict) else rows or ()
        return [
            (str(stream), [(str(i), dict(zip(f[::2], f[1::2], strict=True)) if f else {}) for i, f in entries])
            for stream, entries in streams
        ]

    async def _drop_follower(self) -> None:
        conn, self._follower = self._follower, None
        if conn is not None:
            with contextlib.suppress(RedisError, OSError):
                await conn.disconnect(nowait=True)

    async def mark_approver(self, name: str, ttl_s: float) -> None:
        """Say that the console ``name`` answers tool approvals, for ``ttl_s`` (refreshed while it is attached)."""
        try:
            await self._client.set(approver_key(name), "1", px=max(1, int(ttl_s * 1000)))
        except (RedisError, OSError) as e:
            self._fail("announcing the approver", e)

    async def approvers(self) -> set[str]:
        """The consoles answering tool approvals now."""
        prefix = approver_key("")
        try:
            return {k[len(prefix) :] async for k in self._client.scan_iter(match=prefix + "*", count=500)}
        except (RedisError, OSError) as e:
            self._fail("listing approvers", e)

    async def engine(self, engine_id: str) -> dict[str, Any] | None:
        """One engine's heartbeat (None when it is not registered)."""
        try:
            raw = await self._client.get(engine_key(engine_id))
        except (RedisError, OSError) as e:
            self._fail("reading an engine's heartbeat", e)
        return dict(json.loads(raw)) if raw else None
