"""The event stream and command routes for ``--attach http://`` on an in-process engine serving HTTP: the ring's
rules, who may connect, the subscription's lifetime, a slow client dropped without holding anyone up, commands'
refusals, and the client's URL and token handling."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import websockets
from pydantic import SecretStr
from websockets.asyncio.client import connect as ws_connect

from engine.app import Engine
from engine.config.models import Settings
from engine.events import CallStarted, ConfigReloaded
from engine.http.event_stream import TRY_AGAIN_LATER, EventRing
from engine.http.remote import CLOSE_WAIT_S, HttpRemote
from engine.remote import open_remote
from engine.remote.base import EngineJoined, RemoteEngines, RemoteError, RemoteEvent
from engine.remote.http_client import HttpEngines, parse_url
from tests.engine.core.helpers import settings_with
from tests.engine.http.helpers import AUTH, JSON, TOKEN, http_of, send
from tests.engine.store.redis_peer import eventually

Start = Callable[..., Awaitable[tuple[Engine, str]]]
AUTH_LINE = f"Authorization: Bearer {TOKEN}"


@pytest.fixture
async def started() -> AsyncIterator[Start]:
    engines: list[Engine] = []

    async def factory(token: str | None = TOKEN, **engine: Any) -> tuple[Engine, str]:
        http: dict[str, Any] = {"port": 0, **({"auth_token": token} if token else {})}
        e = Engine(Settings.model_validate({"engine": {"http": http, **engine}}), serve_http=True)
        engines.append(e)
        await e.start()
        return e, str(http_of(e).url)

    yield factory
    for e in engines:
        await e.stop()


def remote_of(engine: Engine) -> HttpRemote:
    return next(c for c in engine.components if isinstance(c, HttpRemote))


def engine_id_of(engine: Engine) -> str:
    return str(remote_of(engine).heartbeat()["id"])


# ----------------------------------------------------------------------------------------------- the ring


def test_the_ring_resumes_after_an_entry_and_says_when_history_is_missing() -> None:
    ring = EventRing(bound=5, lag_bound=3)
    ring.restart(now=1000.0)
    ring.add([ConfigReloaded(ts=1000.0 + i) for i in range(4)])
    ids = [e.id for e in ring.events]
    assert [e.seq for e in ring.events] == [1, 2, 3, 4]
    _, backlog, gap = ring.join(ids[1])
    assert [e.id for e in backlog] == ids[2:] and gap is None
    _, everything, gap = ring.join(None)
    assert len(everything) == 4 and gap is None
    ring.add([ConfigReloaded(ts=2000.0 + i) for i in range(3)])  # 7 events, bound 5: the first two are gone
    assert [e.seq for e in ring.events] == [3, 4, 5, 6, 7]
    _, backlog, gap = ring.join(ids[0])
    assert gap is not None and gap.retained_from == ring.events[0].id and "missed" in gap.reason
    _, backlog, gap = ring.join(ids[1])  # saw up to seq 2: nothing it lacks was evicted
    assert gap is None and [e.seq for e in backlog] == [3, 4, 5, 6, 7]
    _, _, gap = ring.join("999000-0")  # before anyone listened
    assert gap is not None
    with pytest.raises(ValueError):
        ring.join("not-an-id")


def test_a_client_too_far_behind_is_dropped_with_a_reason_and_the_others_are_woken() -> None:
    ring = EventRing(bound=10, lag_bound=4)
    ring.restart(now=1000.0)
    slow, _, _ = ring.join(None)
    fast, _, _ = ring.join(None)
    ring.add([ConfigReloaded() for _ in range(3)])
    assert fast.wake.is_set() and not slow.gone.is_set()
    fast.sent_seq = ring.head_seq  # it sent everything
    ring.add([ConfigReloaded() for _ in range(2)])  # slow is 5 behind now
    assert slow.gone.is_set() and slow.close_code == TRY_AGAIN_LATER and "?after=" in slow.close_reason
    assert not fast.gone.is_set() and ring.clients_dropped == 1
    assert [e.seq for e in ring.after(fast, 10)] == [4, 5]
    with pytest.raises(ValueError, match="lag bound"):
        EventRing(bound=4, lag_bound=4)


# ----------------------------------------------------------------------------------------------- who may connect


async def test_the_stream_and_commands_need_a_configured_token_and_the_right_one(started: Start) -> None:
    _, bare = await started(token=None)
    for method, path in (("GET", "/events"), ("GET", "/engine"), ("POST", "/control/calls_info")):
        got = await send(method, bare + path, headers=JSON)
        assert got.status == 403 and got.json()["key"] == "engine.http.auth_token", got.text
        assert "engine.http.auth_token" in got.json()["error"]
    with pytest.raises(RemoteError, match="403") as refused:
        await HttpEngines(bare).connect()
    assert "auth_token" in str(refused.value)

    engine, base = await started()
    for headers in ({}, {"Authorization": "Bearer wrong-token"}):
        for method, path in (("GET", "/events"), ("GET", "/engine"), ("POST", "/control/calls_info")):
            got = await send(method, base + path, headers={**JSON, **headers})
            assert got.status == 401, got.text
    cross_site = await send("GET", base + "/events", headers={**AUTH, "Origin": "http://evil.example"})
    assert cross_site.status == 403 and cross_site.json()["key"] == "engine.http.allowed_origins"
    rebound = await send("GET", base + "/engine", headers={**AUTH, "Host": "rebind.example"})
    assert rebound.status == 421
    plain = await send("GET", base + "/events", headers=AUTH)
    assert plain.status == 400 and "WebSocket" in plain.json()["error"]
    bad_after = await send("GET", base + "/events?after=yesterday", headers=AUTH)
    assert bad_after.status == 400 and "entry id" in bad_after.json()["error"]

    wrong = HttpEngines(base, token="not-" + TOKEN)
    with pytest.raises(RemoteError, match="refused the token given") as e:
        await wrong.connect()
    with pytest.raises(RemoteError, match="refused the token given"):
        await anext(aiter(wrong.follow()))  # a refusal ends follow(): retrying would not help
    await wrong.close()
    assert TOKEN not in str(e.value) and "not-" + TOKEN not in str(e.value) + wrong.description
    # a browser opening the socket cross-site is refused before the upgrade
    async with aiohttp.ClientSession() as s:
        with pytest.raises(aiohttp.WSServerHandshakeError) as hs:
            await s.ws_connect(base + "/events", headers={**AUTH, "Origin": "https://evil.example"})
        assert hs.value.status == 403
    assert engine.bus.subscriber_count == len(engine.bus._subs)


def test_the_url_carries_no_token_and_the_token_appears_nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_url("http://127.0.0.1:8090/") == "http://127.0.0.1:8090"
    assert parse_url("https://ava.example/engine-a/") == "https://ava.example/engine-a"
    for url, words in (
        ("http://user:secret-pw@127.0.0.1:8090", "must not carry credentials"),
        ("http://127.0.0.1:8090/?token=abc", r"no \?query"),
        ("redis://127.0.0.1:6379", "not 'redis'"),
        ("http://127.0.0.1:99999", "not a valid engine URL"),
        ("http://:8090", "names no host"),
    ):
        with pytest.raises(RemoteError, match=words) as e:
            HttpEngines(url)
        assert "secret-pw" not in str(e.value)
        if url.startswith("http"):
            with pytest.raises(ValueError, match=words):  # what open_remote promises for a URL no client takes
                open_remote(url)
    monkeypatch.setenv("AVA_ENGINE_TOKEN", "env-token-123")
    assert isinstance(open_remote("https://ava.example:8090", token="t"), HttpEngines)
    client = HttpEngines("http://127.0.0.1:8090")
    assert client._headers() == {"Authorization": "Bearer env-token-123"}
    assert "env-token-123" not in client.description
    assert HttpEngines("http://127.0.0.1:8090", token="given")._headers()["Authorization"] == "Bearer given"
    typed: RemoteEngines = client  # the protocol the console codes against
    assert typed.description == "http://127.0.0.1:8090"


async def test_the_client_skips_what_it_cannot_read_and_what_it_saw_already() -> None:
    """A stream with garbage, an unknown event type and a repeat in it (a newer engine, a proxy mangling a frame):
    the client skips each, says so in the log, and goes on."""
    from aiohttp import web

    heartbeat = {"heartbeat": {"id": "odd", "heartbeat_s": 1.0, "capacity": {"live_calls": 0}}}
    known = {"entry_id": "5-0", "seq": 2, "event": ConfigReloaded(changed=("a",)).to_dict()}

    async def events(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        for message in (
            heartbeat,
            "not json",
            [1, 2],
            {"entry_id": "bad", "event": {}},
            {"entry_id": "4-0", "seq": 1, "event": {"type": "from.the.future", "ts": 1.0}},
            {"gap": {"after": "1-0", "retained_from": "4-0", "reason": "restarted"}},
            known,
            known,
            {"entry_id": "6-0", "seq": 3, "event": ConfigReloaded(changed=("b",)).to_dict()},
        ):
            await ws.send_str(message if isinstance(message, str) else json.dumps(message))
        await ws.receive()
        return ws

    app = web.Application()
    app.router.add_get("/events", events)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    client = HttpEngines(f"http://127.0.0.1:{port}", token="t")
    follow = client.follow()
    try:
        joined = await anext(follow)
        assert isinstance(joined, EngineJoined) and joined.info.id == "odd"
        got = [await anext(follow), await anext(follow)]
        assert [(e.entry_id, e.event.changed) for e in got if isinstance(e, RemoteEvent)] == [  # type: ignore[attr-defined]
            ("5-0", ("a",)),
            ("6-0", ("b",)),
        ]
        assert client.last_entry == "6-0" and client.gaps[0]["reason"] == "restarted"
    finally:
        await follow.aclose()
        await client.close()
        await runner.cleanup()


# ----------------------------------------------------------------------------------------------- the stream


async def test_the_subscription_exists_only_while_someone_listens(started: Start) -> None:
    engine, base = await started(heartbeat_s=0.05)  # the ring outlives the last client by 30 heartbeats: 1.5 s
    remote = remote_of(engine)
    before = engine.bus.subscriber_count
    engine.bus.publish(ConfigReloaded(changed=("nobody",)))
    assert remote.ring.head_seq == 0 and engine.bus.subscriber_count == before
    client = HttpEngines(base, token=TOKEN)
    follow = client.follow()
    joined = await anext(follow)
    assert isinstance(joined, EngineJoined) and joined.info.heartbeat_s == 0.05
    assert engine.bus.subscriber_count == before + 1
    engine.bus.publish(ConfigReloaded(changed=("listened",)))
    got = await anext(follow)
    assert isinstance(got, RemoteEvent) and got.event.changed == ("listened",)  # type: ignore[attr-defined]
    assert got.engine_id == joined.info.id
    await follow.aclose()
    await client.close()
    await eventually(lambda: not remote.ring.listeners, what="the client to leave")
    assert engine.bus.subscriber_count == before + 1  # kept a while, for a client that comes back
    await eventually(lambda: engine.bus.subscriber_count == before, what="the subscription to end")
    assert remote.ring.events == []


async def test_closing_the_client_ends_a_running_follow(started: Start) -> None:
    _, base = await started()
    client = HttpEngines(base, token=TOKEN)
    seen: list[object] = []

    async def run() -> None:
        async for item in client.follow():
            seen.append(item)

    task = asyncio.create_task(run())
    await eventually(lambda: seen, what="the engine to join")
    await client.close()
    async with asyncio.timeout(10):
        await task  # ended, not cancelled, and without an error
    assert isinstance(seen[0], EngineJoined) and len(seen) == 1 and not client.streaming


async def test_a_client_that_vanished_without_closing_is_let_go(started: Start) -> None:
    """A peer that answers no ping (its host or network gone, the connection never closed) stops holding a
    listener, and with it the engine's subscription."""
    engine, base = await started(heartbeat_s=0.02)
    remote = remote_of(engine)
    remote.ping_s = 0.5  # PING_S is 20 s; the mechanism is the same
    before = engine.bus.subscriber_count
    reader, writer = await asyncio.open_connection("127.0.0.1", int(base.rsplit(":", 1)[1]))
    writer.write(
        (
            "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{AUTH_LINE}\r\n\r\n"
        ).encode()
    )
    assert (await reader.readline()).startswith(b"HTTP/1.1 101")
    await eventually(lambda: len(remote.ring.listeners) == 1, what="the silent client to listen")
    assert engine.bus.subscriber_count == before + 1
    # it reads nothing and answers no ping from here on
    await eventually(lambda: not remote.ring.listeners, what="the silent client to be let go")
    await eventually(lambda: engine.bus.subscriber_count == before, what="the subscription to end")
    writer.close()


async def test_a_client_attaching_mid_call_learns_the_live_calls_first(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, [], [], engine={"http": {"port": 0, "auth_token": TOKEN}})
    async with Engine(settings, serve_http=True) as engine:
        call = await engine.start_call("c", caller_name="Ann")
        engine.set_tier(call.call_id, "deep")
        client = HttpEngines(str(http_of(engine).url), token=TOKEN)
        follow = client.follow()
        assert isinstance(await anext(follow), EngineJoined)
        first = await anext(follow)
        assert isinstance(first, RemoteEvent) and isinstance(first.event, CallStarted)
        assert (first.event.call_id, first.event.caller_name, first.event.tier) == (call.call_id, "Ann", "deep")
        assert first.event.ts == call.started_at
        await engine.end_call(call.call_id)
        ended = await anext(follow)  # then live, nothing in between
        assert isinstance(ended, RemoteEvent) and ended.event.type == "call.ended"
        await follow.aclose()
        await client.close()


def small_window_socket(port: int) -> socket.socket:
    """A client socket that takes 4 KiB at a time: a reader on a bad line, or one that stopped reading."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


async def test_a_slow_client_is_dropped_while_the_engine_and_a_fast_client_go_on(started: Start) -> None:
    engine, base = await started(heartbeat_s=0.5)
    remote = remote_of(engine)
    # bounds smaller than the defaults (RING_BOUND, LAG_BOUND) so the test publishes megabytes, not tens of them: the
    # kernel takes about 2.5 MB into a stalled loopback connection before the engine's writes wait at all
    remote.ring = EventRing(bound=4_000, lag_bound=2_000)
    fast = HttpEngines(base, token=TOKEN)
    follow = fast.follow()
    assert isinstance(await anext(follow), EngineJoined)
    port = int(base.rsplit(":", 1)[1])
    url = base.replace("http", "ws") + "/events"
    late = await ws_connect(url, sock=small_window_socket(port), additional_headers=AUTH, max_queue=1)
    never = await ws_connect(url, sock=small_window_socket(port), additional_headers=AUTH, max_queue=1)
    await eventually(lambda: len(remote.ring.listeners) == 3, what="the three clients to listen")
    n, pad = 5_000, "x" * 2_000
    received: list[RemoteEvent] = []

    async def read_fast() -> None:
        while len(received) < n:
            item = await anext(follow)
            if isinstance(item, RemoteEvent):
                received.append(item)

    reader = asyncio.create_task(read_fast())
    for i in range(n):  # publishing never waits for a reader: the bus is synchronous and bounded
        engine.bus.publish(ConfigReloaded(changed=(str(i),), error=pad))
        if i % 200 == 199:
            await asyncio.sleep(0.01)  # let the loop run (the pump, the sockets) like a busy engine's would
    await eventually(lambda: remote.ring.clients_dropped == 2, what="both slow clients to be dropped")
    health = await send("GET", base + "/health")
    assert health.status == 200  # the engine answers while the slow clients' sockets are full

    async def read_late() -> tuple[int, websockets.ConnectionClosed]:
        """The late reader finds, after what was already sent, the close code and the reason."""
        messages = 0
        try:
            while True:
                await late.recv()
                messages += 1
        except websockets.ConnectionClosed as closed:
            return messages, closed

    async with asyncio.timeout(60):
        (messages, closed), _ = await asyncio.gather(read_late(), reader)
    assert [int(r.event.changed[0]) for r in received] == list(range(n))  # type: ignore[attr-defined]
    assert remote.ring.lost == 0
    assert 0 < messages < n
    assert closed.rcvd is not None, "the close frame did not arrive"
    assert closed.rcvd.code == TRY_AGAIN_LATER and "too slow" in closed.rcvd.reason
    # the client that never reads cannot take the close frame either: its connection is cut, nothing is left of it
    await eventually(lambda: len(remote._handlers) == 1, timeout=CLOSE_WAIT_S + 10, what="the stuck one cut")
    assert len(remote.ring.listeners) == 1
    await never.close()
    await follow.aclose()
    await fast.close()


async def test_a_changed_token_ends_the_streams_opened_with_the_old_one(started: Start) -> None:
    engine, base = await started()
    client = HttpEngines(base, token=TOKEN)
    follow = client.follow()
    assert isinstance(await anext(follow), EngineJoined)
    rotated = engine.settings.model_copy(deep=True)
    rotated.engine.http.auth_token = SecretStr("rotated-token-9d1")
    await engine.reload(rotated)
    with pytest.raises(RemoteError, match="refused the token given") as refused:
        async with asyncio.timeout(10):
            async for _item in follow:
                pass
    assert "rotated-token-9d1" not in str(refused.value) and TOKEN not in str(refused.value)
    await client.close()
    renewed = HttpEngines(base, token="rotated-token-9d1")
    assert (await renewed.engines()).keys() == {engine_id_of(engine)}
    await renewed.close()


# ----------------------------------------------------------------------------------------------- commands


async def test_commands_answer_with_the_dispatcher_and_refusals_name_what_is_wrong(started: Start) -> None:
    engine, base = await started(id="eng-a")
    client = HttpEngines(base, token=TOKEN)
    await client.connect()
    assert await client.send("eng-a", "calls_info", {}) == {"calls": []}
    assert (await client.send("eng-a", "drain", {}))["draining"] is True
    assert (await client.send("eng-a", "resume", {}))["draining"] is False
    for command, args, words in (
        ("set_tier", {"call_id": "nope", "tier": "deep"}, "no live call 'nope' on engine eng-a"),
        ("set_tier", {"call_id": "c1", "tier": "turbo"}, "argument 'tier'"),
        ("end_call", {"call_id": "c1", "bogus": 1}, "argument 'bogus' is not known"),
    ):
        with pytest.raises(RemoteError, match=words):
            await client.send("eng-a", command, args)
    with pytest.raises(RemoteError, match="unknown command 'explode'"):
        await client.send("eng-a", "explode", {})
    with pytest.raises(RemoteError, match="no engine 'eng-b'"):
        await client.send("eng-b", "calls_info", {})
    assert (await client.engines())["eng-a"].id == "eng-a"
    with pytest.raises(RemoteError, match=r"calls_info: no answer within .* from http://127\.0\.0\.1"):
        await client.send("eng-a", "calls_info", {}, timeout_s=1e-6)  # over before any answer can come
    for path, body, headers, status in (
        ("/control/explode", "{}", {**AUTH, **JSON}, 404),
        ("/control/set_tier", '{"call_id": "x", "tier": "deep"}', {**AUTH, **JSON}, 404),
        ("/control/set_tier", '{"tier": 3}', {**AUTH, **JSON}, 400),
        ("/control/calls_info", "[1, 2]", {**AUTH, **JSON}, 400),
        ("/control/calls_info", "{not json", {**AUTH, **JSON}, 400),
        ("/control/calls_info", "{}", {**AUTH, "Content-Type": "text/plain"}, 415),
    ):
        got = await send("POST", base + path, headers=headers, data=body)
        assert got.status == status and got.json()["error"], (path, body, got.text)
    await engine.stop()
    assert await client.engines() == {}  # nothing answers: no live engine
    with pytest.raises(RemoteError, match="cannot reach"):
        await client.send("eng-a", "calls_info", {})
    await client.close()
