"""The Redis attach client: a console's view of every engine that shares one Redis store (``--attach redis://…``).

Why it exists: engines started with ``engine.store: redis://…`` register a heartbeat and write every event to
their own Stream (``engine.store.base``); a console on another machine needs them as one ``RemoteEngines``
(``engine.remote.base``): which engines live, their events in order (catch-up first, then live), engines joining
and leaving, and commands routed to the engine that owns a call (the control stream, ``engine.store.control``).

How: heartbeats are polled (a quarter of the shortest engine heartbeat, at least every 0.1 s and at most every
0.5 s); a new engine is announced and its retained stream read from the start (or after the last entry already
seen, for an engine that comes back), then every live engine's stream is followed with one ``XREAD BLOCK``. An
engine whose heartbeat key is gone is reported lost after its stream is read to the end: ``clean`` when its last
entry is the ``engine.stopped`` marker a clean stop writes, else "heartbeat expired". Redis lost → reconnect with
backoff and resume after the last entry id per engine (nothing twice, nothing skipped that Redis still holds); just
after a reconnect a missing heartbeat is given time to come back (the engines reconnect with backoff too).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from redis.exceptions import RedisError

from engine.bounds.json_text import loads_bounded
from engine.config.models.scale_out import safe_store_url
from engine.core.backoff import Retry
from engine.recorder.codec import event_from_dict
from engine.remote.base import (
    RECONNECT,
    EngineInfo,
    EngineJoined,
    EngineLost,
    Followed,
    RemoteError,
    RemoteEvent,
    check_approver,
    check_command,
    engine_info,
)
from engine.store.base import APPROVER_EVERY_S, APPROVER_TTL_S, Entry, StoreUnavailable, engine_stream
from engine.store.component import HEARTBEAT_LIVES, STOPPED
from engine.store.component import RECONNECT as ENGINE_RECONNECT
from engine.store.control import CommandFailed, NoAnswer, send_command
from engine.store.redis_store import RedisStore, redis_client

log = logging.getLogger(__name__)

#: One XREAD waits at most this long (then heartbeats are polled again).
BLOCK_MS = 500
#: Entries read per stream at once.
READ_COUNT = 500


class RedisEngines:
    """``RemoteEngines`` over a Redis store (see the module docstring)."""

    def __init__(
        self, url: str, *, timeout_s: float = 2.0, sender: str | None = None, approver: str | None = None
    ) -> None:
        self.description = safe_store_url(url)
        #: The name under which this client answers tool approvals (``approver_key``; None: it does not, and the
        #: engines do not wait for it). Announced while ``follow`` runs.
        self.approver = check_approver(approver)
        #: Who sends the commands, for the engines' log (``ava-console@host`` unless told).
        self.sender = sender or f"ava-console@{socket.gethostname()}"
        self._timeout_s = timeout_s
        #: Heartbeats, catch-up and the followed streams (its socket timeout is above BLOCK_MS).
        self._store = RedisStore(url, timeout_s=timeout_s + BLOCK_MS / 1000)
        #: Commands: blocks on the answer as long as the command's timeout says (bounded by asyncio).
        self._commands = redis_client(url, timeout_s=None, connect_timeout_s=timeout_s)
        #: The last entry id seen per engine: ``follow`` resumes after it (also across a new ``follow``).
        self.after: dict[str, str] = {}
        #: The engine's event counter per engine, and the events known missing (a gap in it: trimmed from the
        #: stream before they were read, or dropped by the engine while Redis was away).
        self.last_seq: dict[str, int] = {}
        self.missed: dict[str, int] = {}
        #: The engines ``follow`` holds live (joined, not reported lost): one whose heartbeat key is missing just
        #: after Redis came back is still sent commands (it picks them up from its control stream once it has
        #: reconnected, within the command's timeout), as ``follow`` gives it time before calling it lost.
        self.live: set[str] = set()
        self._closed = False

    def _fail(self, what: str, e: BaseException) -> RemoteError:
        return RemoteError(f"Redis at {self.description}: {what}: {e}")

    async def connect(self) -> None:
        try:
            await self._store.connect()
        except StoreUnavailable as e:
            raise RemoteError(str(e)) from None

    async def close(self) -> None:
        """Let Redis go; a running ``follow()`` ends (within one blocking read)."""
        self._closed = True
        await self._store.close()
        try:
            await self._commands.aclose()
        except (RedisError, OSError):
            pass

    async def engines(self) -> dict[str, EngineInfo]:
        try:
            beats = await self._store.engines()
        except StoreUnavailable as e:
            raise RemoteError(str(e)) from None
        return {k: engine_info(k, v) for k, v in sorted(beats.items())}

    # ------------------------------------------------------------------------------------------- commands

    async def send(
        self, engine_id: str, command: str, args: Mapping[str, Any], timeout_s: float = 5.0
    ) -> dict[str, Any]:
        check_command(engine_id, command)
        try:
            beat = await self._store.engine(engine_id)
        except StoreUnavailable as e:
            raise RemoteError(f"{command} for engine {engine_id} not sent: {e}") from None
        if beat is None and engine_id not in self.live:
            raise RemoteError(f"{command}: engine {engine_id} is unknown or gone (no heartbeat in {self.description})")
        try:
            async with asyncio.timeout(timeout_s + self._timeout_s + 1):  # a Redis that stops answering mid-wait
                return await send_command(self._commands, engine_id, command, args, timeout_s, self.sender)
        except CommandFailed as e:
            raise RemoteError(str(e)) from None
        except (NoAnswer, TimeoutError):
            raise RemoteError(
                f"no answer from engine {engine_id} to {command} within {timeout_s:g} s (busy, gone or cut off from "
                "Redis); it is not run once past that deadline"
            ) from None
        except (RedisError, OSError) as e:
            raise self._fail(f"sending {command} to engine {engine_id} failed", e) from None

    # ------------------------------------------------------------------------------------------- events

    async def follow(self) -> AsyncIterator[Followed]:
        live: dict[str, EngineInfo] = {}
        stopped: set[str] = set()
        connected = False
        ever_connected = False
        reconnected_at = 0.0
        retry = Retry(RECONNECT)
        next_poll = next_mark = 0.0
        while not self._closed:
            try:
                if not connected:
                    await self._store.connect()
                    if ever_connected:
                        reconnected_at = time.monotonic()
                        log.info(
                            "attach: %s is reachable again; resuming after the last entries seen", self.description
                        )
                    connected = ever_connected = True
                    retry.succeeded()
                    next_poll = next_mark = 0.0
                now = time.monotonic()
                if self.approver and now >= next_mark:
                    await self._store.mark_approver(self.approver, APPROVER_TTL_S)
                    next_mark = now + APPROVER_EVERY_S
                if now >= next_poll:
                    beats = await self._store.engines()
                    async for item in self._joined(beats, live, stopped):
                        yield item
                    async for item in self._gone(beats, live, stopped, now, reconnected_at):
                        yield item
                    beats_s = [i.heartbeat_s for i in live.values() if i.heartbeat_s > 0]
                    next_poll = now + min(0.5, max(0.1, min(beats_s, default=2.0) / 4))
                async for item in self._read(live, stopped, next_poll):
                    yield item
            except StoreUnavailable as e:
                if self._closed:
                    return
                if connected:
                    log.warning("attach: %s; reconnecting", e)
                connected = False
                await retry.pause(str(e))

    async def _joined(
        self, beats: dict[str, Any], live: dict[str, EngineInfo], stopped: set[str]
    ) -> AsyncIterator[Followed]:
        """Each engine with a heartbeat not seen before joins, with its stream so far; the others' info refreshed."""
        for engine_id in sorted(beats):
            info = engine_info(engine_id, beats[engine_id])
            if engine_id not in live:
                live[engine_id] = info
                self.live.add(engine_id)
                stopped.discard(engine_id)
                yield EngineJoined(info)
                async for item in self._catch_up(engine_id, stopped):
                    yield item
            else:
                live[engine_id] = info

    async def _gone(
        self, beats: dict[str, Any], live: dict[str, EngineInfo], stopped: set[str], now: float, reconnected_at: float
    ) -> AsyncIterator[Followed]:
        """Each live engine without a heartbeat is lost (after its last events), unless Redis just came back."""
        for engine_id in sorted(set(live) - set(beats)):
            async for item in self._catch_up(engine_id, stopped):  # its last events, and the marker
                yield item
            clean = engine_id in stopped
            hb = live[engine_id].heartbeat_s or 2.0
            grace = HEARTBEAT_LIVES * hb + ENGINE_RECONNECT.max_s
            if not clean and reconnected_at and now - reconnected_at < grace:
                continue  # Redis came back without its keys: the engine registers again shortly
            del live[engine_id]
            self.live.discard(engine_id)
            reason = (
                "stopped cleanly"
                if clean
                else f"its heartbeat expired (none for {HEARTBEAT_LIVES * hb:g} s: killed, or its host or network lost)"
            )
            yield EngineLost(engine_id, clean, reason)

    async def _read(
        self, live: dict[str, EngineInfo], stopped: set[str], next_poll: float
    ) -> AsyncIterator[RemoteEvent]:
        """The live engines' new events, waiting at most until the next poll (only waiting when none is live)."""
        wait_ms = max(1, min(BLOCK_MS, int((next_poll - time.monotonic()) * 1000)))
        if not live:
            await asyncio.sleep(wait_ms / 1000)
            return
        streams = {engine_stream(e): self.after.get(e, "0") for e in live}
        for stream, entries in await self._store.read_many(streams, wait_ms, READ_COUNT):
            engine_id = stream.removeprefix(engine_stream(""))
            for item in self._events(engine_id, entries, stopped):
                yield item

    async def _catch_up(self, engine_id: str, stopped: set[str]) -> AsyncIterator[RemoteEvent]:
        """The engine's stream after the last entry seen, to its end (``StoreUnavailable`` passes up)."""
        stream = engine_stream(engine_id)
        while True:
            entries = await self._store.read(stream, self.after.get(engine_id, "0"), READ_COUNT)
            for item in self._events(engine_id, entries, stopped):
                yield item
            if len(entries) < READ_COUNT:
                return

    def _count(self, engine_id: str, seq_text: str) -> None:
        try:
            seq = int(seq_text)
        except ValueError:
            return
        last = self.last_seq.get(engine_id)
        self.last_seq[engine_id] = seq
        if last is None or seq == 1 or seq <= last:  # the first one seen, or the engine restarted (same id)
            return
        if seq > last + 1:
            self.missed[engine_id] = self.missed.get(engine_id, 0) + seq - last - 1
            log.warning(
                "attach: engine %s: %d event(s) missing before entry seq %d (trimmed from its stream, or "
                "dropped while Redis was away)",
                engine_id,
                seq - last - 1,
                seq,
            )

    def _events(self, engine_id: str, entries: list[Entry], stopped: set[str]) -> list[RemoteEvent]:
        out: list[RemoteEvent] = []
        for entry_id, fields in entries:
            self.after[engine_id] = entry_id
            self._count(engine_id, fields.get("seq", ""))
            kind = fields.get("type", "")
            if kind == STOPPED:
                stopped.add(engine_id)
                continue
            stopped.discard(engine_id)  # a restarted engine (same id) writes on after its marker
            try:
                event = event_from_dict(loads_bounded(fields.get("event", ""), 64))  # outside text: made valid
            except ValueError:
                event = None
            if event is None:  # an event type this version does not know (a newer engine): skipped
                log.debug("attach: engine %s entry %s: unknown event type %r skipped", engine_id, entry_id, kind)
                continue
            out.append(RemoteEvent(engine_id, entry_id, event))
        return out
