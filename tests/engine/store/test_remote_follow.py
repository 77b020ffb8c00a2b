"""The Redis attach client (engine.remote.redis_client) against a real redis-server: two ``ava-engine serve``
processes (the installed entry point) followed at once, commands routed to one, a late follower's catch-up, kill -9
→ EngineLost within three heartbeats, a clean stop → EngineLost(clean); and Redis restarted mid-run → the follower
resumes with no event missing or repeated (the engine's ``seq`` counter, and the events as published), and so it
does after its connection is cut while Redis keeps its data."""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from engine import open_remote
from engine.events import TierChanged
from engine.recorder.codec import event_classes
from engine.recorder.writer import SKIPPED_TYPES
from engine.remote.base import EngineJoined, EngineLost, Followed, RemoteEvent
from engine.remote.redis_client import RedisEngines
from engine.store.base import engine_stream
from tests.engine.store.redis_peer import RedisServer, eventually
from tests.engine.store.test_capacity_and_serve import ENGINE_BIN, _get
from tests.engine.store.test_redis_store import engine_on, store_of, xrange

HEARTBEAT_S = 1.0  # a key of three lives a loaded machine's pauses; a kill is still told within seconds


class Follower:
    """Runs ``follow()`` in a task and keeps everything it yields."""

    def __init__(self, client: RedisEngines) -> None:
        self.client = client
        self.got: list[Followed] = []
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        async for item in self.client.follow():
            self.got.append(item)

    def events(self, engine_id: str) -> list[RemoteEvent]:
        return [g for g in self.got if isinstance(g, RemoteEvent) and g.engine_id == engine_id]

    def lost(self, engine_id: str) -> list[EngineLost]:
        return [g for g in self.got if isinstance(g, EngineLost) and g.engine_id == engine_id]

    def joined(self) -> set[str]:
        return {g.info.id for g in self.got if isinstance(g, EngineJoined)}


@contextlib.asynccontextmanager
async def following(url: str) -> AsyncIterator[Follower]:
    client = open_remote(url)
    assert isinstance(client, RedisEngines)
    await client.connect()
    f = Follower(client)
    f.task = asyncio.create_task(f._run())
    try:
        yield f
    finally:
        f.task.cancel()
        await asyncio.wait({f.task}, timeout=5)
        await client.close()


def _config(tmp_path: Path, url: str, engine_id: str) -> Path:
    cfg = tmp_path / f"{engine_id}.yaml"
    cfg.write_text(f"engine:\n  store: {url}\n  id: {engine_id}\n  heartbeat_s: {HEARTBEAT_S}\n  http:\n    port: 0\n")
    return cfg


def _start(cfg: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [ENGINE_BIN, "--config", str(cfg), "--json", "serve", "--no-watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cfg.parent,
    )


def _first_line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """What ``serve --json`` prints once it runs (its HTTP URL …)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    assert ready, "serve printed nothing"
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return dict(json.loads(line))


def _tiers(f: Follower, engine_id: str) -> list[str]:
    return [e.event.new for e in f.events(engine_id) if isinstance(e.event, TierChanged)]


async def test_follow_two_serve_processes_route_commands_and_see_one_killed(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    procs: list[subprocess.Popen[str]] = []
    try:
        procs = [_start(_config(tmp_path, redis_server.url, engine_id)) for engine_id in ("ea", "eb")]  # at once
        urls = [_first_line(p)["http"] for p in procs]
        async with following(redis_server.url) as f:
            await eventually(lambda: f.joined() == {"ea", "eb"}, what="both engines joined")
            engines = await f.client.engines()
            assert set(engines) == {"ea", "eb"} and engines["ea"].heartbeat_s == HEARTBEAT_S
            assert engines["eb"].raw["pid"] == procs[1].pid and engines["ea"].max_calls is None
            health = _get(urls[0] + "/health")
            assert health["control"]["reading"] is True and health["shared_book"]["loaded"] is True
            got = await f.client.send("ea", "set_tier", {"call_id": None, "tier": "deep"})
            assert got == {"call_id": None, "tier": "deep", "call": None}
            await f.client.send("eb", "set_tier", {"call_id": None, "tier": "fast"})
            await eventually(
                lambda: _tiers(f, "ea") == ["deep"] and _tiers(f, "eb") == ["fast"],
                what="each engine's tier.changed, from that engine only",
            )
            drained = await f.client.send("eb", "drain", {})
            assert drained["draining"] is True and _get(urls[1] + "/health")["capacity"]["draining"] is True
            assert _get(urls[0] + "/health")["control"]["executed"] == 1  # each command ran on its engine only
            # a console attached later gets each engine's retained history first
            async with following(redis_server.url) as late:
                await eventually(
                    lambda: _tiers(late, "ea") == ["deep"] and _tiers(late, "eb") == ["fast"],
                    what="the late follower's catch-up",
                )
                firsts = [g for g in late.got if not isinstance(g, RemoteEvent)]
                assert {g.info.id for g in firsts if isinstance(g, EngineJoined)} == {"ea", "eb"}
                ids = [e.entry_id for e in late.events("ea")]
                in_order = sorted(ids, key=lambda i: tuple(int(p) for p in i.split("-")))
                assert ids == in_order and len(set(ids)) == len(ids)
            procs[1].send_signal(signal.SIGKILL)
            # the bound only ends a failure; that its heartbeat's expiry (not a timeout of its own) told is the reason's
            await eventually(lambda: f.lost("eb"), timeout=30, what="eb lost")
            lost = f.lost("eb")[0]
            assert lost.clean is False and "heartbeat expired" in lost.reason
            assert not f.lost("ea")
            await f.client.send("ea", "set_tier", {"call_id": None, "tier": "standard"})  # still works
            await eventually(lambda: _tiers(f, "ea") == ["deep", "standard"], what="ea goes on")
            procs[0].send_signal(signal.SIGTERM)
            await eventually(lambda: f.lost("ea"), timeout=15, what="ea stopped")
            assert f.lost("ea")[0].clean is True and f.lost("ea")[0].reason == "stopped cleanly"
            assert procs[0].wait(15) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=10)


async def test_follow_resumes_after_redis_restarts_with_nothing_lost_or_repeated(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    engine = engine_on(tmp_path, redis_server.url)  # engine e1, heartbeat 0.2 s
    store = store_of(engine)
    published = engine.bus.subscribe(maxsize=100_000, types=set(event_classes()) - SKIPPED_TYPES)
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    seqs: dict[str, int] = {}

    async def remember_stream() -> None:
        for entry_id, fields in await xrange(r, engine_stream("e1")):
            seqs[entry_id] = int(fields["seq"])

    sent: list[Any] = []

    def caught_up(f: Follower) -> bool:
        """Every event published so far has reached the follower."""
        sent.extend(published.drain())
        return len(f.events("e1")) >= len(sent) > 0

    async with following(redis_server.url) as f:
        async with engine:
            call = await engine.start_call("c")
            for word in ("one", "two", "three"):
                await engine.user_said(call.call_id, f"echo {word}")
            await eventually(lambda: caught_up(f), what="the follower caught up")
            await remember_stream()
            redis_server.kill()
            for word in ("four", "five"):  # Redis away: the engine buffers, the follower waits
                await engine.user_said(call.call_id, f"echo {word}")
            await eventually(lambda: not store.connected, what="the engine to notice")
            redis_server.start()
            await r.aclose()
            r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
            await eventually(lambda: store.connected and not store.feed.pending, what="the buffer written")
            for word in ("six", "seven"):
                await engine.user_said(call.call_id, f"echo {word}")
            await eventually(lambda: caught_up(f), what="the follower caught up after the restart")
            # every connection cut while Redis keeps its data: the follower must go on after its last entry
            assert int(await r.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")) >= 2
            await engine.user_said(call.call_id, "echo eight")
            await engine.end_call(call.call_id)
            await eventually(lambda: caught_up(f), what="the follower caught up again")
            await remember_stream()
            assert not f.lost("e1")  # Redis came back without the heartbeat: not taken for a dead engine
        await eventually(lambda: f.lost("e1"), what="the clean stop")
        assert f.lost("e1")[0].clean is True
        await remember_stream()  # what the stop wrote
    seen = f.events("e1")
    ids = [e.entry_id for e in seen]
    assert len(ids) == len(set(ids))  # nothing twice
    assert [seqs[i] for i in ids] == list(range(1, len(ids) + 1))  # nothing missing: the engine's counter
    sent.extend(published.drain())
    assert [(e.event.type, e.event.ts) for e in seen] == [(e.type, e.ts) for e in sent]
    assert sum(1 for e in seen if e.event.type == "tool.completed") == 8
    assert store.feed.dropped == 0 and f.client.missed == {}
    await r.aclose()


async def test_a_gap_in_an_engines_counter_is_counted_and_unknown_entries_skipped(redis_server: RedisServer) -> None:
    """What another writer left: seq 1, 2, then 5 (two trimmed away), an event type this version does not know."""
    from engine.events import TierChanged as Tier
    from engine.store.redis_store import RedisStore

    store = RedisStore(redis_server.url)
    await store.register("ex", {"id": "ex", "heartbeat_s": 1.0}, ttl_s=30, keep_s=30)
    r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
    rows = [
        (1, Tier(call_id=None, old="auto", new="fast", reason="t").to_json()),
        (2, '{"type": "from.the.future"}'),
        (5, Tier(call_id=None, old="fast", new="deep", reason="t").to_json()),
    ]
    for seq, event in rows:
        await r.xadd(
            engine_stream("ex"), {"seq": str(seq), "type": json.loads(event)["type"], "call_id": "", "event": event}
        )
    async with following(redis_server.url) as f:
        await eventually(lambda: _tiers(f, "ex") == ["fast", "deep"], what="the readable events")
        assert len(f.events("ex")) == 2 and f.client.missed == {"ex": 2}
    await r.aclose()
    await store.close()


def test_open_remote_picks_the_redis_client_and_names_bad_urls() -> None:
    client = open_remote("rediss://ops:pw-canary-31@redis.example:6380/2")
    assert isinstance(client, RedisEngines) and client.description == "rediss://ops:***@redis.example:6380/2"
    for url, words in (
        ("redis://:pw-canary-31@/0", "names no host"),
        ("redis://:pw-canary-31@h:6379/zero", "must be a number"),
        ("ftp://u:pw-canary-31@h/x", "scheme 'ftp' is not supported"),
        ("h:6379", "is not supported"),
    ):
        with pytest.raises(ValueError, match=words) as e:
            open_remote(url)
        assert "pw-canary-31" not in str(e.value)


async def test_close_ends_a_running_follow(redis_server: RedisServer) -> None:
    from engine.store.redis_store import RedisStore

    store = RedisStore(redis_server.url)
    await store.register("ex", {"id": "ex", "heartbeat_s": 1.0}, ttl_s=30, keep_s=30)
    client = RedisEngines(redis_server.url)
    f = Follower(client)
    f.task = asyncio.create_task(f._run())
    await eventually(lambda: f.joined() == {"ex"}, what="joined")  # now blocked reading ex's stream
    await client.close()
    done, _ = await asyncio.wait({f.task}, timeout=5)
    assert done and f.task.exception() is None  # it ended; it did not reconnect on a fresh pool
    await store.close()
