"""Operator commands over Redis (engine.store.control) on a real redis-server: each command runs once — with two
consumers, after a restart that left it pending, not again when it was claimed before a crash, not at all past its
deadline — and a real engine answers through the one dispatcher (unknown call, bad arguments: clear errors)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from engine.app import Engine
from engine.config.models import Settings
from engine.redaction.redactor import MASK
from engine.remote.base import RemoteError
from engine.remote.redis_client import RedisEngines
from engine.store.base import claim_key, control_stream, reply_key
from engine.store.control import GROUP, ControlReader, NoAnswer, send_command
from engine.store.control_component import ControlComponent
from engine.store.redis_store import redis_client
from tests.engine.store.redis_peer import RedisServer, eventually
from tests.engine.store.test_redis_store import engine_on


class Recorder:
    """An ``execute`` that records what it ran (the protocol's tests; the engine's own is tested below)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.delay_s = delay_s

    async def __call__(self, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        self.ran.append((name, dict(args)))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return {"ran": name, "n": len(self.ran)}


@contextlib.asynccontextmanager
async def running(reader: ControlReader) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(reader.run())
    try:
        yield task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await reader.close()


def client(server: RedisServer) -> aioredis.Redis:
    return redis_client(server.url, timeout_s=None)


def fields(command_id: str, name: str = "drain", args: str = "{}") -> dict[Any, Any]:
    """A control entry as ``send_command`` writes it (deadline 30 s ahead)."""
    deadline = f"{time.time() + 30:.3f}"
    return {"id": command_id, "name": name, "args": args, "sender": "test", "deadline": deadline, "reply_ttl_s": "30"}


async def answer_of(r: aioredis.Redis, command_id: str) -> dict[str, Any]:
    got: Any = await r.blpop([reply_key(command_id)], timeout=10)
    assert got is not None, f"no answer to {command_id}"
    return dict(json.loads(got[1]))


async def test_two_consumers_run_each_command_once(redis_server: RedisServer) -> None:
    r = client(redis_server)
    one, two = Recorder(0.01), Recorder(0.01)
    a = ControlReader(redis_server.url, "e1", one, consumer="e1-a")
    b = ControlReader(redis_server.url, "e1", two, consumer="e1-b")
    async with running(a), running(b):
        await eventually(lambda: a.connected and b.connected, what="both readers")
        answers = await asyncio.gather(*(send_command(r, "e1", "drain", {"i": i}, 10) for i in range(30)))
        assert sorted(x["n"] for x in answers if x["ran"] == "drain")  # every sender got its own answer
        ran = [args["i"] for _, args in one.ran + two.ran]
        assert sorted(ran) == list(range(30))  # each exactly once, across both consumers
        assert one.ran and two.ran  # both consumers took a share
        # the same command id put on the stream twice (a sender retrying after a lost reply): run once
        await r.xadd(control_stream("e1"), fields("dup-1", "resume"))
        await r.xadd(control_stream("e1"), fields("dup-1", "resume"))
        first = await answer_of(r, "dup-1")
        await eventually(lambda: _pending(r, "e1", 0), what="both entries acknowledged")
        assert first["ok"] and [n for n, _ in one.ran + two.ran].count("resume") == 1
        assert await r.llen(reply_key("dup-1")) == 0  # one answer only
    await r.aclose()


async def _pending(r: aioredis.Redis, engine_id: str, n: int) -> bool:
    info: Any = await r.xpending(control_stream(engine_id), GROUP)
    return int(info["pending"]) == n


async def test_a_pending_entry_is_run_after_a_restart_and_a_claimed_one_is_not_run_again(
    redis_server: RedisServer,
) -> None:
    r = client(redis_server)
    stream = control_stream("e1")
    await r.xgroup_create(stream, GROUP, id="0", mkstream=True)
    await r.xadd(stream, fields("read-not-claimed", "drain"))
    await r.xadd(stream, fields("claimed-then-crash", "end_call", args='{"call_id": "c1"}'))
    # a previous run of engine e1 read both, claimed the second and died before answering either
    await r.xreadgroup(GROUP, "e1", {stream: ">"}, count=10)
    await r.set(claim_key("claimed-then-crash"), "running:e1:4242:deadbeef")
    assert await _pending(r, "e1", 2)
    rec = Recorder()
    reader = ControlReader(redis_server.url, "e1", rec)  # the restarted engine (same id, so same consumer)
    async with running(reader):
        ran = await answer_of(r, "read-not-claimed")
        assert ran == {"ok": True, "result": {"ran": "drain", "n": 1}}
        unknown = await answer_of(r, "claimed-then-crash")
        assert unknown["ok"] is False and unknown["kind"] == "unknown"
        assert "outcome unknown: engine e1 restarted while running end_call" in unknown["error"]
        await eventually(lambda: _pending(r, "e1", 0), what="both acknowledged")
    assert rec.ran == [("drain", {})]  # the claimed one never ran again
    assert await r.get(claim_key("claimed-then-crash")) == "done"
    await r.aclose()


async def test_a_command_past_its_deadline_is_answered_expired_and_not_run(redis_server: RedisServer) -> None:
    r = client(redis_server)
    with pytest.raises(NoAnswer):  # nobody reads e1's commands yet
        await send_command(r, "e1", "drain", {}, 0.2)
    entry: Any = await r.xrange(control_stream("e1"))
    command_id = entry[0][1]["id"]
    rec = Recorder()
    async with running(ControlReader(redis_server.url, "e1", rec)):
        late = await answer_of(r, command_id)
    assert late["ok"] is False and late["kind"] == "expired" and "it was not run" in late["error"]
    assert rec.ran == []
    await r.aclose()


async def test_the_reader_comes_back_after_redis_restarts(tmp_path: Path, redis_server: RedisServer) -> None:
    rec = Recorder()
    reader = ControlReader(redis_server.url, "e1", rec)
    async with running(reader):
        r = client(redis_server)
        assert (await send_command(r, "e1", "drain", {}, 5))["n"] == 1
        await r.aclose()
        redis_server.kill()
        await eventually(lambda: not reader.connected, what="the reader to notice")
        redis_server.start()  # empty: the stream and the group are gone
        r = client(redis_server)
        assert (await send_command(r, "e1", "resume", {}, 10))["n"] == 2
        await r.aclose()
    assert [n for n, _ in rec.ran] == ["drain", "resume"]


async def test_a_real_engine_answers_through_its_dispatcher(tmp_path: Path, redis_server: RedisServer) -> None:
    # a heartbeat that outlives a loaded machine's pauses: this test is about commands, not about expiry
    engine = engine_on(tmp_path, redis_server.url, heartbeat_s=2)
    remote = RedisEngines(redis_server.url, timeout_s=2.0)
    async with engine:
        control = next(c for c in engine.components if isinstance(c, ControlComponent))
        await eventually(lambda: control.reader is not None and control.reader.connected, what="the reader")
        call = await engine.start_call("c")
        got = await remote.send("e1", "set_tier", {"call_id": call.call_id, "tier": "deep"})
        assert got["call"]["tier"] == "deep" and engine.call_info(call.call_id).tier == "deep"  # type: ignore[union-attr]
        switch = {"call_id": call.call_id, "exposed_name": "echo", "enabled": False, "apply": "now"}
        got = await remote.send("e1", "set_tool_enabled", switch)
        assert got["enabled"] is False and call.tool_overrides == {"echo": False}
        calls = await remote.send("e1", "calls_info", {})
        assert [c["call_id"] for c in calls["calls"]] == [call.call_id]
        with pytest.raises(RemoteError, match=r"say_now: no live call 'c-404' on engine e1"):
            await remote.send("e1", "say_now", {"call_id": "c-404", "text": "hi"})
        with pytest.raises(RemoteError, match=r"set_tier on engine e1: argument 'tier': Input should be"):
            await remote.send("e1", "set_tier", {"call_id": call.call_id, "tier": "warp"})
        with pytest.raises(RemoteError, match=r"argument 'loud' is not known \(whisper takes call_id, text\)"):
            await remote.send("e1", "whisper", {"call_id": call.call_id, "text": "x", "loud": True})
        with pytest.raises(RemoteError, match=r"unknown command 'reboot' for engine e1"):
            await remote.send("e1", "reboot", {})
        with pytest.raises(RemoteError, match=r"drain: engine e9 is unknown or gone"):
            await remote.send("e9", "drain", {})
        assert engine.call_info(call.call_id).tier == "deep"  # type: ignore[union-attr]  # nothing bad ran
        assert control.reader is not None and control.reader.executed == 6
        await remote.send("e1", "end_call", {"call_id": call.call_id, "reason": "remote"})
        assert engine.call_info(call.call_id) is None
    await remote.close()


async def test_memory_store_reads_no_commands(tmp_path: Path) -> None:
    engine = engine_on(tmp_path, "memory")
    async with engine:
        control = next(c for c in engine.components if isinstance(c, ControlComponent))
        assert control.reader is None and control.status() == {"reading": False}


async def test_commands_fail_clearly_when_redis_is_away(redis_server: RedisServer) -> None:
    url = redis_server.url
    redis_server.kill()
    remote = RedisEngines(url.replace("redis://", "redis://:pw-canary-77@"), timeout_s=0.5)
    with pytest.raises(RemoteError) as err:
        await remote.send("e1", "drain", {})
    assert "drain for engine e1 not sent" in str(err.value) and "pw-canary-77" not in str(err.value)
    with pytest.raises(RemoteError, match=r"Redis at redis://:\*\*\*@127\.0\.0\.1"):
        await remote.connect()
    await remote.close()


async def test_no_secret_stays_in_redis_or_comes_back(tmp_path: Path, redis_server: RedisServer) -> None:
    """Canary: a provider key sent as a command's argument is masked in the error and gone from Redis after."""
    canary = "sk-canary-ctl-5e2b9a"
    script = tmp_path / "script.yaml"
    script.write_text(json.dumps({"greeting": "hi", "intents": [], "fallback": "what?"}))
    settings = Settings.model_validate(
        {
            "engine": {"store": redis_server.url, "id": "e1", "heartbeat_s": 0.2},
            "providers": {
                "s": {"type": "scripted", "script": str(script)},
                "o": {"type": "openai_chat", "model": "m", "api_key": canary},
            },
            "contexts": {"c": {"provider": "s", "tools": []}},
        }
    )
    engine = Engine(settings)
    remote = RedisEngines(redis_server.url)
    async with engine:
        for args in ({"call_id": canary, "text": "x"}, {"call_id": "c-1", "text": "x", canary: 1}):
            with pytest.raises(RemoteError) as err:
                await remote.send("e1", "whisper", args)
            assert canary not in str(err.value) and MASK in str(err.value)
        r = client(redis_server)
        dump: list[str] = []
        async for key in r.scan_iter("*"):
            kind = str(await r.type(key))
            readers: dict[str, Any] = {"string": r.get, "hash": r.hgetall, "stream": r.xrange, "list": r.lrange}
            value: Any = readers[kind](key) if kind != "list" else r.lrange(key, 0, -1)
            dump.append(f"{key} {await value}")
        await r.aclose()
    await remote.close()
    text = "\n".join(dump)
    assert "ava:claim:" in text and "ava:control:e1 []" in text  # answered, popped, entries deleted
    assert canary not in text
