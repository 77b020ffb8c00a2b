"""The shared latency book: engines of one environment pool their measured tool latencies and calibration reports.

Why it exists: the budget layer tiers a tool by its measured p99 once it has ``budget.min_samples`` calls, and by
its declared latency before that. An engine that starts next to others that have been calling the same tools for
hours should not guess: with a Redis store, every sample the engine's latency book records is also pushed to
``ava:latency:{environment}:{tool key}`` (a list, newest first, trimmed to ``budget.window``) and every
calibration report to the hash ``ava:calibration:{environment}``; a starting engine reads them before its MCP
servers come up, so its tools start in the class their measurements give (``engine.environment`` names the pool;
engines of another environment share nothing).

Samples carry wall-clock times in Redis and are converted to the budget's clock when loaded, so their age (and the
health horizon) survives the trip. Writes are batched each heartbeat; while Redis is away the newest samples wait
(bounded, the oldest dropped). Loading happens once, before anything is written, so an engine never reads back
its own samples. With ``engine.store: memory`` it does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, unquote

from engine.budget.stats import BookKey, Sample
from engine.core.backoff import Backoff
from engine.services import restart_if_changed
from engine.store.base import calibration_key, latency_prefix

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from engine.config.models import Settings
    from engine.core.tasks import Spawn

log = logging.getLogger(__name__)

#: Shared samples and reports not refreshed for this long expire (an environment nobody runs any more).
KEEP_S = 7 * 24 * 3600
#: Samples waiting for Redis at most (the oldest dropped past it).
OUTBOX = 10_000
RECONNECT = Backoff(0.5, 10.0)


class SharedBudget(Protocol):
    """What the shared book needs of the budget layer (``engine.budget.layer.BudgetLayer`` has it)."""

    def clock(self) -> float: ...

    def share(
        self,
        on_sample: Callable[[BookKey, Sample], None] | None,
        on_calibrated: Callable[[str, dict[str, Any]], None] | None,
    ) -> None: ...

    def load_shared(
        self, samples: Mapping[BookKey, Sequence[Sample]], calibrations: Mapping[str, dict[str, Any]]
    ) -> int: ...


def _errors() -> tuple[type[BaseException], ...]:
    """Redis's errors and the socket's: redis-py (0.1 s to import) is imported once a Redis store is in use, not by
    every engine, CLI command and console on the in-memory store."""
    from redis.exceptions import RedisError

    return (RedisError, OSError)


def tool_key(environment: str, key: BookKey) -> str:
    """The Redis list of one tool's shared samples (its book key, JSON and percent-encoded, after the prefix)."""
    return latency_prefix(environment) + quote(json.dumps(list(key)), safe="")


def book_key(environment: str, redis_key: str) -> BookKey | None:
    """The book key a ``tool_key`` names (None for a key that is not one)."""
    try:
        parts = json.loads(unquote(redis_key.removeprefix(latency_prefix(environment))))
    except ValueError:
        return None
    if not (isinstance(parts, list) and len(parts) == 3 and all(isinstance(p, str) for p in parts)):
        return None
    return (parts[0], parts[1], parts[2])


class SharedBook:
    """Engine component: loads the environment's shared latencies at start, then pushes this engine's news."""

    name = "shared_book"

    def __init__(
        self, settings: Callable[[], Settings], budget: SharedBudget, spawn: Spawn, engine_id: Callable[[], str]
    ) -> None:
        self._settings = settings
        self._budget = budget
        self._spawn = spawn
        self._engine_id = engine_id
        self._client: aioredis.Redis | None = None
        self._environment = "default"
        self._outbox: deque[tuple[BookKey, float, Sample]] = deque(maxlen=OUTBOX)
        self._reports: dict[str, dict[str, Any]] = {}
        self._task: asyncio.Task[None] | None = None
        self.loaded = False
        #: Samples taken from other engines at start, and this engine's samples written so far.
        self.samples_loaded = 0
        self.samples_written = 0
        self.last_error = ""

    # ------------------------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        cfg = self._settings().engine
        if cfg.store == "memory":
            return
        self._environment = cfg.environment
        from engine.store.redis_store import redis_client

        self._client = redis_client(cfg.store)
        self.loaded = False
        self._budget.share(self._sample, self._calibrated)
        try:
            await self._load()  # before MCP servers register their tools, so they start measured
        except _errors() as e:
            self._failed("loading the shared latency book", e)
        self._task = self._spawn(self._loop(cfg.heartbeat_s), name="store:shared_book")

    async def stop(self) -> None:
        self._budget.share(None, None)
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=3.0)  # bounded: see redis_store.raise_if_cancelled
            self._task = None
        if self._client is not None:
            with contextlib.suppress(*_errors()):
                if self.loaded:
                    await asyncio.wait_for(self._flush(), 2.0)
            with contextlib.suppress(*_errors()):
                await self._client.aclose()
            self._client = None

    async def reload(self, old: Settings, new: Settings) -> None:
        await restart_if_changed(self, old, new, lambda s: (s.engine.store, s.engine.environment))

    def status(self) -> dict[str, Any]:
        """The /health section: whether this environment's latency samples are shared (with a Redis store), and
        how many were loaded, written and are waiting."""
        if self._client is None:
            return {"environment": self._settings().engine.environment, "shared": False}
        return {
            "shared": True,
            "environment": self._environment,
            "loaded": self.loaded,
            "samples_loaded": self.samples_loaded,
            "samples_written": self.samples_written,
            "waiting": len(self._outbox),
            "last_error": self.last_error,
        }

    # ------------------------------------------------------------------------------------------- news in

    def _sample(self, key: BookKey, sample: Sample) -> None:
        wall = time.time() - max(0.0, self._budget.clock() - sample.at)
        self._outbox.append((key, wall, sample))

    def _calibrated(self, server: str, report: dict[str, Any]) -> None:
        self._reports[server] = {**report, "engine": self._engine_id(), "at": time.time()}

    # ------------------------------------------------------------------------------------------- Redis

    def _failed(self, what: str, e: BaseException) -> None:
        if not self.last_error:
            log.warning("shared latency book: %s failed (%s: %s); retrying", what, type(e).__name__, e)
        self.last_error = f"{what}: {type(e).__name__}: {e}"

    async def _loop(self, interval_s: float) -> None:
        retry = 0
        while True:
            await asyncio.sleep(interval_s if retry == 0 else RECONNECT.delay_s(retry))
            try:
                if not self.loaded:
                    await self._load()
                await self._flush()
                retry = 0
                self.last_error = ""
            except _errors() as e:
                self._failed("writing the shared latency book", e)
                retry += 1

    async def _load(self) -> None:
        assert self._client is not None
        env, window = self._environment, self._settings().budget.window
        keys = [str(k) async for k in self._client.scan_iter(match=latency_prefix(env) + "*", count=500)]
        async with self._client.pipeline(transaction=False) as pipe:
            for k in keys:
                pipe.lrange(k, 0, window - 1)
            pipe.hgetall(calibration_key(env))
            found: list[Any] = await pipe.execute()
        now_wall, now = time.time(), self._budget.clock()
        samples: dict[BookKey, list[Sample]] = {}
        for k, rows in zip(keys, found[:-1], strict=True):
            key = book_key(env, k)
            if key is None:
                continue
            parsed = [_sample_of(row, now_wall, now) for row in reversed(rows or [])]
            samples[key] = [s for s in parsed if s is not None]
        reports: dict[str, dict[str, Any]] = {}
        for server, raw in (found[-1] or {}).items():
            with contextlib.suppress(ValueError, TypeError):
                reports[str(server)] = dict(json.loads(raw))
        self.samples_loaded = self._budget.load_shared(samples, reports)
        self.loaded = True
        if self.samples_loaded or reports:
            log.info(
                "shared latency book (%s): %d sample(s) of %d tool(s) and %d calibration report(s) loaded",
                env,
                self.samples_loaded,
                len(samples),
                len(reports),
            )

    async def _flush(self) -> None:
        assert self._client is not None
        if not self._outbox and not self._reports:
            return
        taken = [self._outbox.popleft() for _ in range(len(self._outbox))]  # out before the write: a cancel
        reports, self._reports = self._reports, {}  # landing after it cannot make the stop write them twice
        env, window = self._environment, self._settings().budget.window
        by_key: dict[BookKey, list[str]] = {}
        for key, wall, s in taken:
            by_key.setdefault(key, []).append(
                json.dumps([round(wall, 3), round(s.duration_ms, 3), s.status, int(s.is_probe)])
            )
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                for key, rows in by_key.items():
                    name = tool_key(env, key)
                    pipe.lpush(name, *rows)  # oldest first, so the newest ends at the head
                    pipe.ltrim(name, 0, window - 1)
                    pipe.pexpire(name, KEEP_S * 1000)
                if reports:
                    mapping: dict[Any, Any] = {k: json.dumps(v, default=str) for k, v in reports.items()}
                    pipe.hset(calibration_key(env), mapping=mapping)
                    pipe.pexpire(calibration_key(env), KEEP_S * 1000)
                await pipe.execute()
        except _errors():  # back in front, in order, for the next try (newer news stays after them)
            self._outbox.extendleft(reversed(taken))
            self._reports = {**reports, **self._reports}
            raise
        self.samples_written += len(taken)


def _sample_of(row: str, now_wall: float, now: float) -> Sample | None:
    """A shared row ``[wall time, ms, status, probe]`` as a sample on the budget's clock (None when malformed)."""
    try:
        wall, ms, status, probe = json.loads(row)
        duration = float(ms)
        if not duration >= 0:  # negative or NaN: not a measurement
            return None
        return Sample(now - max(0.0, now_wall - float(wall)), duration, str(status), bool(probe))
    except (ValueError, TypeError):
        return None
