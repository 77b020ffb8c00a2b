"""The store interface every implementation offers and the key layout they share (``engine.store.opening``
opens one).

Why it exists: the component that feeds a store (``engine.store.component``) and a reader on the other side (a
console attached to many engines) must agree on one small set of operations and one naming of keys, whatever the
store is. The layout, under the ``ava:`` prefix:

* ``ava:engine:{engine}`` — the heartbeat: a JSON object (id, host, pid, version, contexts, capacity, live calls,
  store status), set with a TTL of three heartbeats, deleted on a clean stop;
* ``ava:events:engine:{engine}`` and ``ava:events:call:{engine}:{call}`` — Streams of the engine's events (every
  event, and each call's own), trimmed with ``MAXLEN ~``; an entry's fields are ``seq`` (the engine's event
  counter: a gap is a lost event), ``type``, ``call_id`` and ``event`` (the event as JSON, already redacted);
  both streams use the same explicit entry id, so writing a batch again after a lost reply adds nothing twice;
* ``ava:call:{engine}:{call}`` — a hash of the live call's state (context, tier, provider, tools shown, state),
  kept ``call_state_ttl_s`` after its last update (the call's stream expires with it);
* ``ava:control:{engine}`` — the Stream of operator commands for the engine (``engine.store.control``), read by
  the engine's consumer group; ``ava:reply:{command}`` the list its answer is pushed to (the sender pops it) and
  ``ava:claim:{command}`` the marker that makes a command run once (``running:…`` then ``done``);
* ``ava:latency:{environment}:{tool key}`` — the shared latency book: the newest samples of one tool (a list of
  JSON ``[wall time, ms, status, probe]``, newest first), and ``ava:calibration:{environment}`` a hash of each
  server's last calibration report (``engine.store.shared_book``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

PREFIX = "ava"


def engine_key(engine_id: str) -> str:
    return f"{PREFIX}:engine:{engine_id}"


#: A console's approver key lives this long and is refreshed every ``APPROVER_EVERY_S`` while it follows.
APPROVER_TTL_S = 6.0
APPROVER_EVERY_S = 2.0


def approver_key(name: str) -> str:
    """A console that answers tool approvals for every engine of the store, while the key lives."""
    return f"{PREFIX}:approver:{name}"


def engine_stream(engine_id: str) -> str:
    return f"{PREFIX}:events:engine:{engine_id}"


def call_stream(engine_id: str, call_id: str) -> str:
    return f"{PREFIX}:events:call:{engine_id}:{call_id}"


def call_key(engine_id: str, call_id: str) -> str:
    return f"{PREFIX}:call:{engine_id}:{call_id}"


def control_stream(engine_id: str) -> str:
    return f"{PREFIX}:control:{engine_id}"


def reply_key(command_id: str) -> str:
    return f"{PREFIX}:reply:{command_id}"


def claim_key(command_id: str) -> str:
    return f"{PREFIX}:claim:{command_id}"


def latency_prefix(environment: str) -> str:
    return f"{PREFIX}:latency:{environment}:"


def calibration_key(environment: str) -> str:
    return f"{PREFIX}:calibration:{environment}"


class StoreUnavailable(RuntimeError):
    """The store cannot be reached or refused an operation; ``str()`` names the store and what failed."""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as it is written: its stream entry id (``ms-n``, rising), the engine's counter and the JSON."""

    id: str
    seq: int
    type: str
    call_id: str | None
    event: str

    def fields(self) -> dict[str, str]:
        return {"seq": str(self.seq), "type": self.type, "call_id": self.call_id or "", "event": self.event}


#: A stream entry as read back: (entry id, fields).
Entry = tuple[str, dict[str, str]]


class EventStore(Protocol):
    """What the engine writes and a reader reads; every failure to reach the store is ``StoreUnavailable``."""

    #: ``memory`` or the URL without its password, for logs and status.
    description: str

    async def connect(self) -> None:
        """Reach the store now (``StoreUnavailable`` with the reason when it cannot be reached)."""
        ...

    async def close(self) -> None: ...

    async def last_entry_id(self, engine_id: str) -> str | None:
        """The newest entry id of the engine's stream (a restarted engine with a fixed id continues after it)."""
        ...

    async def register(self, engine_id: str, info: Mapping[str, Any], ttl_s: float, keep_s: float) -> None:
        """Set the heartbeat key to ``info`` for ``ttl_s``, and keep the engine's stream ``keep_s`` from now
        (refreshed with every heartbeat, so only a stopped or dead engine's stream expires)."""
        ...

    async def unregister(self, engine_id: str) -> None: ...

    async def append(self, engine_id: str, events: Sequence[StoredEvent], maxlen: int) -> None:
        """Add the events, in order, to the engine's stream and each to its call's stream (``MAXLEN ~ maxlen``);
        an entry already written (same id) is skipped, not duplicated."""
        ...

    async def send_events(self, engine_id: str, events: Sequence[StoredEvent], maxlen: int) -> asyncio.Future[None]:
        """``append`` without waiting for the store's answer: send the batch now (``StoreUnavailable`` when it
        cannot be) and return the future of its answer, so the next batch can go out meanwhile. Answers come in
        the order the batches were sent; when one fails, nothing sent after it is written and every later future
        fails too (send them again from the oldest unanswered)."""
        ...

    async def put_calls(self, engine_id: str, states: Mapping[str, Mapping[str, str]], ttl_s: float) -> None:
        """Write each call's state hash (by call id) and let it (and the call's stream) expire ``ttl_s`` from now;
        all of them in one round trip (a busy engine changes many calls between two writes)."""
        ...

    async def read(self, stream: str, after: str = "0", count: int = 1000) -> list[Entry]:
        """Entries of ``stream`` after entry id ``after`` (``0``: from the start), oldest first."""
        ...

    async def engines(self) -> dict[str, dict[str, Any]]:
        """Every registered (live) engine's heartbeat, by engine id."""
        ...

    async def call_state(self, engine_id: str, call_id: str) -> dict[str, str]:
        """A call's state hash (empty when there is none, or it expired)."""
        ...
