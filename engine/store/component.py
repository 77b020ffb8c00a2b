"""The store as an engine component: registers the engine, pumps its events and its calls' state into the store.

Why a component: it starts and stops with the engine (register at start, unregister on a clean stop), owns two
tasks spawned in the engine's task group (the event pump and the heartbeat) and gets only what it needs — a
settings getter, the bus, metrics, ``spawn``, and getters for the heartbeat's facts and the live calls.

Events come from one bus subscription, so they are the redacted events every subscriber sees (the bus masks known
secrets before fan-out); they are stamped and buffered (``EventFeed``) and sent in batches as soon as they are
taken, without waiting for the answer to the batch before (``engine.store.redis_writer``); an answered batch
leaves the buffer, a failed one is sent again with everything after it. When the store is
lost mid-run calls go on: events stay buffered up to ``engine.store_buffer`` (the oldest dropped past it, counted
in ``ai_agent_store_events_dropped_total``, the log and ``status()``), and the pump reconnects with backoff and
writes them in order. At start an unreachable store either stops the engine (``engine.store_required``) or is
retried the same way while the engine runs standalone. With ``engine.store: memory`` (the default) it does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from engine.core.backoff import Backoff, Retry
from engine.events.bus import SkippedEvents
from engine.services import Component, Services, restart_if_changed
from engine.store.base import EventStore, StoredEvent, StoreUnavailable
from engine.store.feed import CallStates, EventFeed, LiveCall
from engine.store.opening import open_store

if TYPE_CHECKING:
    from engine.config.models import Settings
    from engine.events.bus import Subscription

log = logging.getLogger(__name__)

__all__ = ["LiveCall", "StoreComponent", "StoreStartError", "default_engine_id"]

#: How long the pump rests after sending a batch (what arrives meanwhile goes in the next one: an attached console
#: sees an event within about this much plus a round trip), and the most events in one batch.
BATCH_S = 0.0
BATCH_MAX = 500
#: Calls' state hashes are written at most this often (every turn changes one; the events carry the moment).
CALL_STATE_S = 0.25
#: Every call's whole state hash is written again at least this often (and at once after a reconnect: Redis may
#: have lost it); in between a write sends only the fields that changed, or none (it only keeps the hash alive).
FULL_STATE_S = 30.0
#: Reconnect waits: from half a second, doubling, up to 10 s.
RECONNECT = Backoff(0.5, 10.0)
#: The heartbeat key lives this many heartbeats: a dead engine disappears within them.
HEARTBEAT_LIVES = 3
#: The type of the last entry of an engine's stream when it stopped cleanly (not an event: readers skip it).
STOPPED = "engine.stopped"
#: What a clean stop spends at most writing what is still buffered.
FINAL_FLUSH_S = 3.0


class StoreStartError(RuntimeError):
    """The store is required (``engine.store_required``) and cannot be reached at start; ``str()`` says why."""


def default_engine_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class StoreComponent(Component):
    name = "store"

    def __init__(
        self, services: Services, facts: Callable[[], Mapping[str, Any]], live_calls: Callable[[], Iterable[LiveCall]]
    ) -> None:
        super().__init__(services)
        #: The heartbeat's facts about this engine (version, contexts, capacity, live calls).
        self._facts = facts
        self._live_calls = live_calls
        self.engine_id = ""
        self.store: EventStore | None = None
        self.feed = EventFeed(10_000)
        self.calls = CallStates()
        self.connected = False
        self.written = 0
        self.reconnects = 0
        self.last_error = ""
        self._retry = Retry(RECONNECT)
        self._retry_at = 0.0
        self._sub: Subscription | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._started_at = 0.0
        self._sub_dropped = 0
        self._connecting = asyncio.Lock()
        self._calls_due = 0.0
        self._full_due = 0.0
        self._stopping = False
        #: The batches sent whose answer is still to come, oldest first (the store answers in this order).
        self._unanswered: deque[tuple[list[StoredEvent], asyncio.Future[None]]] = deque()

    # ------------------------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        cfg = self._settings().engine
        self.engine_id = cfg.id or default_engine_id()
        if cfg.store == "memory":
            # One engine (and its console, in the same process) shares nothing: no subscription, no tasks, no
            # per-event cost — the tool path's "events nobody listens for are not built" stays true.
            return
        self.store = open_store(cfg.store)
        self.feed = EventFeed(cfg.store_buffer, SkippedEvents("store", self.metrics.count_skipped))
        self.calls = CallStates()
        self._started_at = time.time()
        try:
            await self._connect()
        except StoreUnavailable as e:
            if cfg.store_required:
                await self.store.close()
                self.store = None
                raise StoreStartError(
                    f"{e}; engine.store_required is true, so the engine does not start without it "
                    "(start Redis, fix engine.store, or set engine.store_required: false to run standalone)"
                ) from None
            self._lost(e)  # /health and the heartbeat say why; the pump retries with backoff
            log.warning(
                "%s; running standalone (engine.store_required is false): events are kept (up to %d, "
                "engine.store_buffer) and written once the store is reachable",
                e,
                cfg.store_buffer,
            )
        from engine.recorder.codec import event_classes
        from engine.recorder.writer import SKIPPED_TYPES  # the audio level meter: many per second, no history

        self._sub_dropped = 0
        self._sub = self.bus.subscribe(maxsize=cfg.store_buffer, types=set(event_classes()) - SKIPPED_TYPES)
        if self.connected:
            await self._beat()
        self._tasks = [
            self._spawn(self._pump(self._sub), name="store:events"),
            self._spawn(self._heartbeat_loop(cfg.heartbeat_s), name="store:heartbeat"),
        ]

    async def stop(self) -> None:
        sub, store = self._sub, self.store
        self._stopping = True  # a store away at stop gets a try now, not after the backoff's wait
        if sub is not None:
            sub.close()  # the pump takes what is left, writes it and ends on its own (no cancel to race)
        pump, beat = [*self._tasks, None, None][:2]
        if beat is not None:
            beat.cancel()
        if pump is not None:
            done, _ = await asyncio.wait({pump}, timeout=FINAL_FLUSH_S)
            if not done:
                pump.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait({t}, timeout=1.0)
        self._tasks = []
        self._sub = None
        if store is None:
            self._stopping = False
            return
        if self.feed.pending:  # the last write failed (the store dropped us mid-stop): once more, now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._flush(settle=True), FINAL_FLUSH_S)
        self._stopping = False
        if self.connected and not self.feed.pending:
            try:  # a reader of the stream tells a clean stop from a lost engine by this last entry
                await store.append(
                    self.engine_id,
                    [self.feed.marker(STOPPED, time.time())],
                    self._settings().engine.store_stream_maxlen,
                )
            except StoreUnavailable as e:
                log.warning("store: stopping: %s", e)
        if self.connected:
            try:
                await store.unregister(self.engine_id)
            except StoreUnavailable as e:
                log.warning("store: stopping: %s", e)
        if self.feed.pending:
            log.warning(
                "store: %d event(s) were not written to %s (it was not reachable at stop)",
                len(self.feed.pending),
                store.description,
            )
        await store.close()
        self.store = None
        self._set_connected(False)

    async def reload(self, old: Settings, new: Settings) -> None:
        await restart_if_changed(self, old, new, lambda s: (s.engine.store, s.engine.id, s.engine.store_buffer))

    # ------------------------------------------------------------------------------------------- status

    def status(self) -> dict[str, Any]:
        """The /health section and the heartbeat's: where, whether reachable, and what is buffered, written and
        dropped."""
        return {
            "store": self.store.description if self.store is not None else self._settings().engine.store,
            "engine_id": self.engine_id,
            "connected": self.connected,
            "buffered": len(self.feed.pending),
            "written": self.written,
            "dropped": self.feed.dropped,
            "skipped": self.feed.skipped.skipped,
            "reconnects": self.reconnects,
            "last_error": self.last_error,
        }

    # ------------------------------------------------------------------------------------------- connection

    def _set_connected(self, up: bool) -> None:
        self.connected = up
        self.metrics.store_connected.set(1 if up else 0)

    async def _connect(self) -> None:
        assert self.store is not None
        await self.store.connect()
        self.feed.continue_after(await self.store.last_entry_id(self.engine_id))
        self._full_due = 0.0  # a restarted Redis lost the calls' hashes: the next heartbeat writes them whole
        self._set_connected(True)
        self._retry.succeeded()

    def _lost(self, e: StoreUnavailable) -> None:
        if self.connected:
            log.warning("store: %s; calls go on, events are buffered (up to %d) until it is back", e, self.feed.bound)
        self._set_connected(False)
        self.last_error = str(e)
        self._retry_at = time.monotonic() + self._retry.failed(str(e))

    async def _ensure_connected(self) -> bool:
        if self.connected:
            return True
        if (time.monotonic() < self._retry_at and not self._stopping) or self.store is None:
            return False
        async with self._connecting:
            if self.connected:
                return True
            try:
                await self._connect()
            except StoreUnavailable as e:
                self._lost(e)
                return False
        self.reconnects += 1
        log.info(
            "store: %s is reachable again; writing %d buffered event(s)", self.store.description, len(self.feed.pending)
        )
        await self._beat()  # a restarted Redis lost the registration: it is back at once
        return self.connected

    # ------------------------------------------------------------------------------------------- the pump

    def _take(self, events: list[Any]) -> None:
        dropped = self.feed.add(events)
        sub = self._sub
        if sub is not None and sub.dropped > self._sub_dropped:  # lost before the pump got them (a burst)
            dropped += sub.dropped - self._sub_dropped
            self.feed.dropped += sub.dropped - self._sub_dropped
            self._sub_dropped = sub.dropped
        self.calls.follow(events)
        if dropped:
            self.metrics.store_events_dropped.inc(dropped)
            if self.feed.dropped == dropped or self.feed.dropped % 1000 < dropped:
                log.warning(
                    "store: buffer full (engine.store_buffer %d): %d event(s) dropped so far",
                    self.feed.bound,
                    self.feed.dropped,
                )
        self.metrics.store_events_buffered.set(len(self.feed.pending))

    async def _pump(self, sub: Subscription) -> None:
        while True:
            wait = None if not self.feed.pending else max(0.05, self._retry_at - time.monotonic())
            try:  # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow the stop's cancel
                async with asyncio.timeout(wait):
                    first = await sub.get()
            except TimeoutError:  # nothing new, but something to write once the store is back
                first = None
            except StopAsyncIteration:  # closed by stop, and everything taken: write the rest and end
                await self._flush(calls_now=True, settle=True)
                return
            if first is not None:
                self._take([first, *sub.drain()])
            await self._flush()
            if first is not None:
                await asyncio.sleep(BATCH_S)

    async def _flush(self, calls_now: bool = False, settle: bool = False) -> None:
        """Send what is buffered and not sent yet, oldest first, without waiting for the store's answers (they
        let the events go as they come, ``_answered``); then (at most every ``CALL_STATE_S``, or ``calls_now``) the
        changed calls' state. ``settle``: wait for every answer too. Stops at the first failure."""
        if self.store is None or not await self._ensure_connected():
            return
        cfg = self._settings().engine
        try:
            while batch := self.feed.batch(BATCH_MAX, self._unanswered[-1][0][-1].seq if self._unanswered else 0):
                answer = await self.store.send_events(self.engine_id, batch, cfg.store_stream_maxlen)
                self._unanswered.append((batch, answer))
                answer.add_done_callback(self._answered)
            if calls_now or time.monotonic() >= self._calls_due:
                self._calls_due = time.monotonic() + CALL_STATE_S
                await self._write_calls(cfg.call_state_ttl_s)
        except StoreUnavailable as e:
            self._lost(e)
        except Exception as e:  # not the store's fault (a bug): the pump must not die of it; /health says why
            log.exception("store: writing events failed")
            self._lost(StoreUnavailable(f"writing events failed: {type(e).__name__}: {e}"))
        if settle and self._unanswered:
            await asyncio.wait([answer for _batch, answer in self._unanswered])

    def _answered(self, answer: asyncio.Future[None]) -> None:
        """The store's answer to the oldest batch sent: written (let it go), or lost with everything sent after it
        (then all that is pending goes again, from the oldest, once the store is reachable)."""
        error = StoreUnavailable("cancelled") if answer.cancelled() else answer.exception()
        if error is not None:
            if all(a is not answer for _batch, a in self._unanswered):
                return  # one of a batch of failures already handled
            self._unanswered.clear()  # the later ones fail too (or were sent before this failure was known)
            if self.connected:
                self._lost(error if isinstance(error, StoreUnavailable) else StoreUnavailable(str(error)))
            return
        if not self._unanswered or self._unanswered[0][1] is not answer:
            return  # cleared by an earlier failure meanwhile: sent again from the oldest
        batch, _ = self._unanswered.popleft()
        self.feed.written(batch)
        self.written += len(batch)
        self.metrics.store_events_buffered.set(len(self.feed.pending))

    async def _write_calls(self, ttl_s: float, full: bool = False) -> None:
        """The changed calls' state: only the fields that changed since the last write, or every field when
        ``full``; either way the hash and the call's stream live ``ttl_s`` from now."""
        assert self.store is not None
        for live in self._live_calls():
            self.calls.live(live.call_id, live.provider, live.tools_shown, live.turn)
        changed = sorted(self.calls.changed)
        self.calls.changed.difference_update(changed)  # a change made while this write is out is written next time
        states = self.calls.to_write(changed, {"engine": self.engine_id}, full)
        try:
            await self.store.put_calls(self.engine_id, states, ttl_s)
        except StoreUnavailable:
            self.calls.changed.update(states)
            raise
        self.calls.wrote(states)
        for call_id in states:
            if self.calls.calls[call_id].get("state") == "ended":
                self.calls.forget(call_id)

    # ------------------------------------------------------------------------------------------- heartbeat

    async def _beat(self) -> None:
        """Register (or refresh) this engine and keep its live calls' state from expiring."""
        if self.store is None:
            return
        cfg = self._settings().engine
        info = {
            "id": self.engine_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_at": self._started_at,
            "heartbeat_s": cfg.heartbeat_s,
            **self._facts(),
            "store": self.status(),
        }
        try:
            await self.store.register(self.engine_id, info, cfg.heartbeat_s * HEARTBEAT_LIVES, cfg.call_state_ttl_s)
            self.calls.changed.update(c for c in self.calls.calls if c not in self.calls.ended)
            full = time.monotonic() >= self._full_due  # after a (re)connect, and every FULL_STATE_S
            await self._write_calls(cfg.call_state_ttl_s, full=full)
            if full:
                self._full_due = time.monotonic() + FULL_STATE_S
        except StoreUnavailable as e:
            self._lost(e)

    async def _heartbeat_loop(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            if self.connected:
                await self._beat()
            else:
                await self._ensure_connected()
