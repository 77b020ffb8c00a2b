"""Capacity (engine.max_calls, drain), the secrets canary, and ``ava-engine serve`` (the installed entry point)
with a real Redis: registered while it runs, gone within three heartbeats of a kill -9, refused at start when the
store is required and away, drained and resumed by ``ava-engine drain`` through its HTTP API and token."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from engine.calls.capacity import CallRefused
from engine.config.models import Settings
from engine.redaction.redactor import secret_values
from engine.store.base import engine_key
from tests.engine.store.redis_peer import RedisServer, eventually, free_port
from tests.engine.store.test_redis_store import ECHO, engine_on, store_of

ROOT = Path(__file__).resolve().parents[3]
ENGINE_BIN = str(ROOT / ".venv" / "bin" / "ava-engine")


async def test_max_calls_refuses_the_next_call_until_one_ends(tmp_path: Path) -> None:
    engine = engine_on(tmp_path, "memory", max_calls=1)
    async with engine:
        first = await engine.start_call("c")
        with pytest.raises(CallRefused, match=r"engine.max_calls is 1"):
            await engine.start_call("c")
        assert engine.capacity()["refused"] == {"draining": 0, "max_calls": 1}
        await engine.end_call(first.call_id)
        second = await engine.start_call("c")
        assert second.active


async def test_drain_refuses_new_calls_and_lets_live_ones_finish(tmp_path: Path) -> None:
    engine = engine_on(tmp_path, "memory")
    async with engine:
        live = await engine.start_call("c")
        assert engine.drain()["draining"] is True
        with pytest.raises(CallRefused, match="draining"):
            await engine.start_call("c")
        assert "I said" in (await engine.user_said(live.call_id, "echo on")).text  # the live call goes on
        await engine.end_call(live.call_id)
        assert engine.capacity()["live_calls"] == 0
        engine.resume()
        assert (await engine.start_call("c")).active


def test_bad_store_keys_are_clear_errors() -> None:
    for value, words in (
        ("http://localhost:6379", "scheme 'http' is not a store"),
        ("redis://:pw@/0", "names no host"),
        ("redis://localhost:6379/zero", "must be a number"),
    ):
        with pytest.raises(ValueError, match=words):
            Settings.model_validate({"engine": {"store": value}})
    with pytest.raises(ValueError, match="is not an engine id"):
        Settings.model_validate({"engine": {"id": "has space"}})
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Settings.model_validate({"engine": {"max_calls": 0}})
    s = Settings.model_validate({"engine": {"store": "rediss://app:s3cr%40t-pass@redis.example:6380/2"}})
    assert {"s3cr%40t-pass", "s3cr@t-pass"} <= secret_values(s)  # the redactor masks the URL's password


async def test_no_secret_reaches_redis(tmp_path: Path) -> None:
    """Canary: a provider key said by the caller, and Redis' own password, appear nowhere in Redis."""
    from tests.engine.store.redis_peer import REDIS_SERVER

    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (tests/peers/system-deps.sh installs it)")
    canary, password = "sk-canary-7f3a9e1d5b", "redis-canary-pw-42"
    server = RedisServer(tmp_path, password=password)
    server.start()
    try:
        script = tmp_path / "script.yaml"
        script.write_text(json.dumps({"greeting": "hi", "intents": [ECHO], "fallback": "what?"}))
        settings = Settings.model_validate(
            {
                "engine": {"store": server.url, "id": "e1", "heartbeat_s": 0.2},
                "providers": {
                    "s": {"type": "scripted", "script": str(script)},
                    "o": {"type": "openai_chat", "model": "m", "api_key": canary},
                },
                "contexts": {"c": {"provider": "s", "tools": ["echo"]}},
            }
        )
        from engine.app import Engine
        from tests.engine.core.helpers import echo_tool

        engine = Engine(settings, extra_tools=[echo_tool()])
        store = store_of(engine)
        async with engine:
            call = await engine.start_call("c")
            await engine.user_said(call.call_id, f"echo {canary}")
            await engine.user_said(call.call_id, f"my key is {canary} and {password}")
            await eventually(lambda: store.written > 6 and not store.feed.pending, what="the events written")
            assert password not in json.dumps(store.status())
            r = aioredis.from_url(server.url, decode_responses=True, socket_timeout=5)
            dump: list[str] = []
            async for key in r.scan_iter("*"):
                kind = str(await r.type(key))
                readers: dict[str, Any] = {"string": r.get, "hash": r.hgetall, "stream": r.xrange}
                value: Any = readers[kind](key)
                dump.append(f"{key} {await value}")
            await r.aclose()
        text = "\n".join(dump)
        assert "transcript.added" in text and engine_key("e1") in text  # the dump is the real thing
        assert canary not in text and password not in text
    finally:
        server.kill()


def _serve(cfg: Path) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    proc = subprocess.Popen(
        [ENGINE_BIN, "--config", str(cfg), "--json", "serve", "--no-watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cfg.parent,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    assert ready, "serve printed nothing"
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return proc, json.loads(line)


def _get(url: str, token: str | None = None) -> dict[str, Any]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(req, timeout=5) as r:
        return dict(json.loads(r.read()))


def _drain(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ENGINE_BIN, "--config", str(cfg), "--json", "drain", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cfg.parent,
    )


async def test_serve_registers_drains_with_its_token_and_vanishes_after_kill_9(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    token = "tok-0123456789abcdef"
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        f"engine:\n  store: {redis_server.url}\n  id: srv1\n  heartbeat_s: 0.3\n  max_calls: 4\n"
        f"  http:\n    port: 0\n    auth_token: {token}\n"
    )
    proc, first = _serve(cfg)
    try:
        url = first["http"]
        r = aioredis.from_url(redis_server.url, decode_responses=True, socket_timeout=5)
        beat = json.loads(await r.get(engine_key("srv1")) or "{}")
        assert beat["pid"] == proc.pid and beat["capacity"]["max_calls"] == 4
        health = _get(url + "/health")  # no token needed: a load balancer reads it
        assert health["store"]["connected"] is True and health["capacity"]["draining"] is False
        port = url.rsplit(":", 1)[1]
        cfg.write_text(cfg.read_text().replace("port: 0", f"port: {port}"))  # drain finds it through the config
        drained = _drain(cfg)
        assert drained.returncode == 0, drained.stderr
        assert json.loads(drained.stdout)["draining"] is True
        assert _get(url + "/health")["capacity"]["draining"] is True
        bare = tmp_path / "no-token.yaml"
        bare.write_text("engine:\n  http:\n    port: 0\n")
        wrong = _drain(bare, "--resume", "--url", url)
        assert wrong.returncode == 1 and "bearer token" in wrong.stdout and token not in wrong.stdout
        resumed = _drain(cfg, "--resume")
        assert resumed.returncode == 0 and json.loads(resumed.stdout)["draining"] is False
        assert 0 < await r.pttl(engine_key("srv1")) <= 900  # three heartbeats of 0.3 s
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

        async def gone() -> bool:
            return await r.get(engine_key("srv1")) is None

        await eventually(gone, timeout=5, what="the dead engine's heartbeat to expire")
        await r.aclose()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def test_serve_refuses_to_start_when_the_required_store_is_away(tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        f"engine:\n  store: redis://:pw-canary-123@127.0.0.1:{free_port()}/0\n  store_required: true\n"
        "  http:\n    port: 0\n"
    )
    proc = subprocess.run(
        [ENGINE_BIN, "--config", str(cfg), "serve", "--no-watch"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "pw-canary-123" not in proc.stderr + proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "engine.store_required" in errors[0] and str(cfg) in errors[0], proc.stderr
