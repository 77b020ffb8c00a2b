"""Event batches written back to back on one Redis connection, each answered in order: the store's hot path.

Why it exists: the store's pump used to send a batch and wait for Redis's answer before it took the next events,
so whatever a call published during that round trip waited for it too (on a loaded host about a third of what an
attached console waited for an event), and every batch went through redis-py's whole command path (a connection
from the pool and back, per-command bookkeeping: most of what publishing cost the engine in CPU). Here a batch goes
out as soon as it is taken, on a connection of its own, while earlier batches are still unanswered; Redis answers
them in order and each answer settles that batch's future.

Order across failures: while the batch before it is unanswered, a batch names that batch's last entry id, and the
script writes nothing unless that entry is in the engine's stream. Each event is written to its call's stream first
and to the engine's stream last, so that entry being there means the whole earlier batch is written: a batch that
failed inside Redis is never overtaken by the next one (which would make it look "already written" when it is sent
again). After any failure the connection is closed, every unanswered batch fails with it, and the caller sends
them again from the oldest: entries already written are skipped, never duplicated.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import RedisError

from engine.store.base import StoreUnavailable

#: What Redis answers to an XADD whose explicit id is not above the stream's newest: the entry is there already.
ALREADY_WRITTEN = "equal or smaller than the target stream top item"
#: The start of the error a batch answers when the batch before it is not (all) written.
OUT_OF_ORDER = "AVA-ORDER"

#: KEYS[1] is the engine's stream, KEYS[2..] the calls' streams; ARGV[1] the MAXLEN, ARGV[2] the last entry id of
#: the batch sent before this one while it is unanswered ('' when none is), then six values per event: entry id,
#: the index of its call's stream in KEYS (0: none), seq, type, call id, event JSON. An entry already written (the
#: same batch again after a lost answer) is skipped; any other error stops the batch and is returned.
APPEND_LUA = (
    """
local maxlen, prev = ARGV[1], ARGV[2]
if prev ~= '' and #redis.call('XREVRANGE', KEYS[1], '+', prev, 'COUNT', 1) == 0 then
  return redis.error_reply('"""
    + OUT_OF_ORDER
    + """ entry ' .. prev .. ' of the batch before is not written')
end
for i = 3, #ARGV, 6 do
  local id, k = ARGV[i], tonumber(ARGV[i + 1])
  local targets = {KEYS[1]}
  if k > 0 then targets = {KEYS[k], KEYS[1]} end
  for _, key in ipairs(targets) do
    local r = redis.pcall('XADD', key, 'MAXLEN', '~', maxlen, id, 'seq', ARGV[i + 2], 'type', ARGV[i + 3],
                          'call_id', ARGV[i + 4], 'event', ARGV[i + 5])
    if type(r) == 'table' and r.err and not string.find(r.err, '"""
    + ALREADY_WRITTEN
    + """', 1, true) then
      return r
    end
  end
end
return #ARGV
"""
)
APPEND_SHA = hashlib.sha1(APPEND_LUA.encode()).hexdigest()  # Redis names a script by its SHA-1


def own_connection(client: aioredis.Redis) -> AbstractConnection:
    """A connection of its own (not the pool's: what is read on it answers only what was sent on it) with the
    client's address, TLS and credentials, and no socket timeout: its user bounds each wait itself."""
    pool = client.connection_pool
    return pool.connection_class(**{**pool.connection_kwargs, "socket_timeout": None})


def _observed(done: asyncio.Future[None]) -> None:
    """A batch's failure is the caller's to handle; one that nobody awaits (closed, or failed along with an earlier
    batch) is not an "exception never retrieved" warning."""
    if not done.cancelled():
        done.exception()


@dataclass(eq=False)
class _Link:
    """One connection and the batches sent on it that Redis has not answered yet (oldest first)."""

    conn: AbstractConnection
    waiting: deque[tuple[asyncio.Future[None], str]] = field(default_factory=deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    reader: asyncio.Task[None] | None = None


class EventWriter:
    """Sends event batches on a connection of its own, without waiting for the answer of the one before."""

    def __init__(self, client: aioredis.Redis, description: str, timeout_s: float) -> None:
        self._client = client
        self.description = description
        #: How long Redis may take to take a batch or answer it before the connection counts as lost.
        self._timeout_s = timeout_s
        self._link: _Link | None = None
        self._opening = asyncio.Lock()
        #: Why the last connection was lost, until ``reset``: no batch may go out on a new connection before the
        #: caller has taken back the unanswered ones (they must go first, or they would look "already written").
        self._lost: StoreUnavailable | None = None

    @property
    def unanswered(self) -> int:
        """Batches sent that Redis has not answered yet."""
        return len(self._link.waiting) if self._link is not None else 0

    def _error(self, what: str, e: BaseException) -> StoreUnavailable:
        return StoreUnavailable(f"Redis at {self.description}: {what} failed: {type(e).__name__}: {e}")

    async def send(self, keys: Sequence[str], args: Sequence[Any], last_id: str) -> asyncio.Future[None]:
        """Send one batch (``APPEND_LUA``'s KEYS, and its ARGV from the events on: the MAXLEN first) whose last entry
        id is ``last_id``, opening the connection first if needed; the future is done when Redis wrote it, or
        fails with ``StoreUnavailable`` when it did not (and then nothing sent after it was written either).
        ``StoreUnavailable`` at once when it cannot be sent, or the connection was lost since ``reset``."""
        if self._lost is not None:
            raise self._lost
        link = self._link or await self._open()
        prev = link.waiting[-1][1] if link.waiting else ""
        packed = link.conn.pack_command("EVALSHA", APPEND_SHA, len(keys), *keys, args[0], prev, *args[1:])
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_observed)
        link.waiting.append((done, last_id))
        link.wake.set()
        try:  # queued on the socket at once (in the order of ``waiting``); drain waits only when it is full
            async with asyncio.timeout(self._timeout_s):
                await link.conn.send_packed_command(packed, check_health=False)
        except (RedisError, OSError, TimeoutError) as e:
            error = self._error("writing events", e)
            self._broken(link, error)
            raise error from None
        return done

    async def _open(self) -> _Link:
        async with self._opening:
            if self._link is not None:
                return self._link
            conn = own_connection(self._client)  # answers come back on the connection the batches went out on
            try:
                async with asyncio.timeout(self._timeout_s):
                    await conn.connect()
                    await conn.send_command("SCRIPT", "LOAD", APPEND_LUA)  # again after a Redis restart
                    await conn.read_response()
            except (RedisError, OSError, TimeoutError) as e:
                with contextlib.suppress(Exception):
                    await conn.disconnect()
                raise self._error("connecting the event writer", e) from None
            link = self._link = _Link(conn)
            link.reader = asyncio.create_task(self._read_answers(link), name="store:answers")
            return link

    async def _read_answers(self, link: _Link) -> None:
        try:
            while True:
                while not link.waiting:
                    link.wake.clear()
                    await link.wake.wait()
                async with asyncio.timeout(self._timeout_s):
                    await link.conn.read_response()
                done, _ = link.waiting.popleft()
                if not done.done():
                    done.set_result(None)
        except Exception as e:  # an error answer (ResponseError) too; anything else must not leave batches waiting
            self._broken(link, self._error("writing events", e))

    def _broken(self, link: _Link, error: StoreUnavailable) -> None:
        """The link is lost: every batch still unanswered fails, and the next ``send`` opens a new connection."""
        if self._link is link:
            self._link = None
            self._lost = error
        while link.waiting:
            done, _ = link.waiting.popleft()
            if not done.done():
                done.set_exception(error)
        if link.reader is not None and link.reader is not asyncio.current_task():
            link.reader.cancel()
        task = asyncio.get_running_loop().create_task(link.conn.disconnect(nowait=True))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a socket already gone: nothing to do

    async def reset(self) -> None:
        """Close the connection (batches still unanswered fail) and let the next ``send`` open a new one: the
        caller sends from its oldest unanswered batch on."""
        await self.close()
        self._lost = None

    async def close(self) -> None:
        """Let the connection go; batches still unanswered fail."""
        link, self._link = self._link, None
        if link is None:
            return
        if link.reader is not None:
            link.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await link.reader
        while link.waiting:
            done, _ = link.waiting.popleft()
            if not done.done():
                done.set_exception(StoreUnavailable(f"Redis at {self.description}: the event writer was closed"))
        with contextlib.suppress(RedisError, OSError):
            await link.conn.disconnect()
