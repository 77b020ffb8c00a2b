"""Operator commands over Redis: the control stream an engine reads, and the sender's side of it.

Why it exists: a console attached to many engines through Redis must reach the engine that owns a call, and a
command (hang up, a tier override, apply-now) must run once — not twice when a reply is lost, not again when the
engine restarts, not at all when the sender already gave up. Redis has the pieces: a Stream per engine read by a
consumer group (``ava:control:{engine}``, group ``engine``, the engine's id as consumer name so a restarted engine
re-reads its own unacknowledged entries), a claim marker per command (``SET NX``) and a reply list the sender
blocks on (``ava:reply:{command}``, with a TTL). The protocol:

1. the sender ``XADD``s ``id`` (a fresh command id), ``name``, ``args`` (JSON), ``sender`` and ``deadline`` (epoch
   seconds) and waits on ``BLPOP ava:reply:{id}`` until the deadline;
2. the engine reads it (``XREADGROUP``), claims it (``SET ava:claim:{id} running:… NX``), runs it through the one
   dispatcher (``engine.operator.control``, handed in as ``execute``) and, in one transaction, pushes the answer,
   marks the claim ``done``, acknowledges the entry and deletes it (an operator's text does not stay in Redis);
3. a command already past its deadline is answered ``expired`` and not run; an entry re-read after a restart whose
   claim says ``running`` (the engine died while running it) is answered "outcome unknown", never run again; one
   whose claim says ``done`` is only acknowledged; one claimed by another live consumer is left to it.

Answers are JSON objects: ``{"ok": true, "result": {...}}`` or ``{"ok": false, "kind": …, "error": "…"}``.
Deadlines compare wall clocks: engines and consoles are expected to run NTP. The reader reconnects with the
engine's ``Backoff`` and recreates its group after a Redis restart; an answer it could not write is written first
once Redis is back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError

from engine.bounds.json_text import loads_bounded
from engine.core.backoff import Backoff, Retry
from engine.store.base import claim_key, control_stream, reply_key
from engine.store.redis_store import raise_if_cancelled, redis_client

if TYPE_CHECKING:
    import redis.asyncio as aioredis


log = logging.getLogger(__name__)

GROUP = "engine"
#: How long one XREADGROUP blocks (the reader's socket timeout is above it).
BLOCK_MS = 1000
#: Entries read at once; the control stream keeps about this many (XADD MAXLEN ~).
READ_COUNT = 32
STREAM_MAXLEN = 1000
#: How deep a command's JSON arguments may nest (they are flat: a call id, a name, a reason).
ARGS_DEPTH = 16
#: A claim marker outlives any command and any restart that could re-read its entry.
CLAIM_TTL_S = 24 * 3600
#: The sender's answer waits this much longer than its deadline before it expires unread.
REPLY_GRACE_S = 30.0
RECONNECT = Backoff(0.5, 10.0)

Execute = Callable[[str, Mapping[str, Any]], Awaitable[dict[str, Any]]]


class CommandFailed(RuntimeError):
    """The engine answered a command with an error; ``kind`` is the dispatcher's (or ``expired``/``unknown``)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class NoAnswer(TimeoutError):
    """No answer came before the command's deadline (it will not run after it)."""


# ------------------------------------------------------------------------------------------------- the sender


async def send_command(
    client: aioredis.Redis,
    engine_id: str,
    command: str,
    args: Mapping[str, Any],
    timeout_s: float,
    sender: str = "",
) -> dict[str, Any]:
    """Put ``command`` on the engine's control stream and wait for its answer: the result, ``CommandFailed`` with
    the engine's message, ``NoAnswer`` after ``timeout_s``, or ``RedisError``/``OSError`` when Redis is away.
    ``client`` must have no socket timeout below ``timeout_s`` (it blocks on the reply)."""
    command_id = uuid.uuid4().hex
    deadline = time.time() + timeout_s
    fields: dict[Any, Any] = {
        "id": command_id,
        "name": command,
        "args": json.dumps(dict(args)),
        "sender": sender,
        "deadline": f"{deadline:.3f}",
        "reply_ttl_s": f"{timeout_s + REPLY_GRACE_S:.1f}",
    }
    try:
        await client.xadd(control_stream(engine_id), fields, maxlen=STREAM_MAXLEN, approximate=True)
    except RedisConnectionError:  # a pooled connection a restarted Redis closed: once more, on a fresh one (an
        # entry that did get written before the error is the same command id twice: the claim runs it once)
        await client.xadd(control_stream(engine_id), fields, maxlen=STREAM_MAXLEN, approximate=True)
    got: Any = await client.blpop([reply_key(command_id)], timeout=max(0.01, deadline - time.time()))
    if got is None:
        raise NoAnswer(command_id)
    answer = json.loads(got[1])
    if not answer.get("ok"):
        raise CommandFailed(str(answer.get("error", "failed")), str(answer.get("kind", "failed")))
    return dict(answer.get("result") or {})


# ------------------------------------------------------------------------------------------------- the engine


class ControlReader:
    """Reads one engine's control stream and answers each command once (see the module docstring)."""

    def __init__(self, url: str, engine_id: str, execute: Execute, consumer: str | None = None) -> None:
        self.engine_id = engine_id
        self.consumer = consumer or engine_id
        #: Tells this process's claims from a previous run's (same consumer name after a restart).
        self.instance = f"{self.consumer}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._execute = execute
        self._client = redis_client(url, timeout_s=BLOCK_MS / 1000 + 5)
        self._stream = control_stream(engine_id)
        #: Answers not written because Redis went away: (entry id, command id, answer, reply TTL).
        self._unsent: list[tuple[str, str, dict[str, Any], float]] = []
        self.executed = 0
        self.answered = 0
        self.connected = False
        self.last_error = ""

    async def close(self) -> None:
        with contextlib.suppress(RedisError, OSError):
            await self._client.aclose()

    async def run(self) -> None:
        """Read and answer until cancelled; Redis lost → reconnect with backoff (the group is recreated)."""
        retry = Retry(RECONNECT)
        while True:
            try:
                await self._ensure_group()
                await self._write_unsent()
                if not self.connected:
                    log.info("control: reading commands for engine %s from %s", self.engine_id, self._stream)
                self.connected = True
                retry.succeeded()
                await self._serve()
            except (RedisError, OSError) as e:
                if isinstance(e, ResponseError) and "NOGROUP" in str(e):
                    continue  # Redis restarted without its data: the group is made again at once
                if self.connected:
                    log.warning("control: Redis lost (%s: %s); commands wait until it is back", type(e).__name__, e)
                self.connected = False
                self.last_error = f"{type(e).__name__}: {e}"
                await retry.pause(self.last_error)

    async def _ensure_group(self) -> None:
        try:
            await self._client.xgroup_create(self._stream, GROUP, id="0", mkstream=True)
        except ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise

    async def _serve(self) -> None:
        after = "0"  # first what this consumer read and never acknowledged (a previous run's), then new entries
        while True:
            rows: Any = await self._client.xreadgroup(
                GROUP, self.consumer, {self._stream: after}, count=READ_COUNT, block=None if after != ">" else BLOCK_MS
            )
            raise_if_cancelled()
            entries = rows[0][1] if rows else []
            if after != ">" and not entries:
                after = ">"
                continue
            for entry_id, fields in entries:
                if after != ">":
                    after = entry_id
                await self.handle(str(entry_id), {str(k): str(v) for k, v in (fields or {}).items()})

    async def handle(self, entry_id: str, fields: Mapping[str, str]) -> None:
        """Answer one entry of the stream (at most once per command id, across consumers and restarts)."""
        command_id, name = fields.get("id", ""), fields.get("name", "")
        if not command_id:  # nobody can be answered: an entry not written by send_command
            log.warning("control: entry %s on %s has no command id; dropped", entry_id, self._stream)
            await self._forget(entry_id)
            return
        reply_ttl = _float(fields.get("reply_ttl_s"), REPLY_GRACE_S)
        claimed = await self._client.set(
            claim_key(command_id), f"running:{self.instance}", nx=True, px=CLAIM_TTL_S * 1000
        )
        state = "" if claimed else str(await self._client.get(claim_key(command_id)) or "")
        owner = state.removeprefix("running:") if state.startswith("running:") else ""
        if claimed or owner == self.instance or not state:
            # ours (a claim whose reply was lost is ours too: it never ran), or one whose marker expired (its
            # deadline has long passed: answered "expired")
            answer = await self._run(command_id, name, fields)
        elif owner and owner.rsplit(":", 2)[0] == self.consumer:
            answer = _failure(
                "unknown",
                f"outcome unknown: engine {self.engine_id} restarted while running {name or 'the command'} "
                f"(command {command_id}); check the call's state before sending it again",
            )
        else:  # answered already ("done"), or a duplicate entry another consumer is running
            await self._forget(entry_id)
            return
        await self._answer(entry_id, command_id, answer, reply_ttl)

    async def _run(self, command_id: str, name: str, fields: Mapping[str, str]) -> dict[str, Any]:
        deadline = _float(fields.get("deadline"), 0.0)
        if deadline and time.time() > deadline:
            late = time.time() - deadline
            return _failure(
                "expired", f"{name} expired {late:.1f} s before engine {self.engine_id} read it: it was not run"
            )
        try:
            args = loads_bounded(fields.get("args") or "{}", ARGS_DEPTH)  # outside text: bounded, made valid
        except ValueError as e:
            return _failure("bad_request", f"{name} on engine {self.engine_id}: the arguments are not JSON ({e})")
        self.executed += 1
        sender = fields.get("sender", "") or "unknown sender"
        try:
            result = await self._execute(name, args)
        except Exception as e:  # the dispatcher's CommandError, with its kind; anything else is a failure
            kind = str(getattr(e, "kind", "failed"))
            log.info("control: %s from %s (command %s) not done: %s", name, sender, command_id, kind)
            return _failure(kind, str(e))
        log.info("control: %s from %s (command %s) done", name, sender, command_id)  # the operator's audit trail
        return {"ok": True, "result": result}

    async def _answer(self, entry_id: str, command_id: str, answer: dict[str, Any], reply_ttl: float) -> None:
        try:
            await self._write_answer(entry_id, command_id, answer, reply_ttl)
        except (RedisError, OSError):
            self._unsent.append((entry_id, command_id, answer, reply_ttl))
            raise

    async def _write_answer(self, entry_id: str, command_id: str, answer: dict[str, Any], reply_ttl: float) -> None:
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.lpush(reply_key(command_id), json.dumps(answer))
            pipe.pexpire(reply_key(command_id), max(1, int(reply_ttl * 1000)))
            pipe.set(claim_key(command_id), "done", px=CLAIM_TTL_S * 1000)
            pipe.xack(self._stream, GROUP, entry_id)
            pipe.xdel(self._stream, entry_id)  # the arguments (an operator's text) do not stay in Redis
            await pipe.execute()
        self.answered += 1

    async def _forget(self, entry_id: str) -> None:
        """Acknowledge an entry that needs no answer from us, and delete it."""
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.xack(self._stream, GROUP, entry_id)
            pipe.xdel(self._stream, entry_id)
            await pipe.execute()

    async def _write_unsent(self) -> None:
        while self._unsent:
            await self._write_answer(*self._unsent[0])
            self._unsent.pop(0)


def _failure(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "error": message}


def _float(value: str | None, default: float) -> float:
    try:
        return float(value) if value else default
    except ValueError:
        return default
