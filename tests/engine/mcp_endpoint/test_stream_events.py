"""The endpoint's event store for resumable streams: per-session namespaces, bounds, expiry, and its config."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
from mcp.server.streamable_http import EventMessage
from mcp.types import JSONRPCNotification

from engine.config.errors import ConfigError
from engine.config.loader import load_settings
from engine.config.models.engine import McpResumeConfig
from engine.mcp_endpoint.resume import SessionOwners
from engine.mcp_endpoint.stream_events import Owner, StreamEvents, bind_owner, unbind_owner


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def note(text: str) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"data": text})


def make(clock: Clock | None = None, **limits: Any) -> StreamEvents:
    cfg = McpResumeConfig(**limits)
    return StreamEvents(lambda: cfg, clock or Clock())


async def put(store: StreamEvents, owner: Owner, stream: str, text: str | None) -> str:
    token = bind_owner(owner)
    try:
        return await store.store_event(stream, None if text is None else note(text))
    finally:
        unbind_owner(token)


async def replay(store: StreamEvents, owner: Owner | None, after: str) -> tuple[str | None, list[str]]:
    got: list[str] = []

    async def send(ev: EventMessage) -> None:
        assert isinstance(ev.message, JSONRPCNotification) and ev.message.params is not None
        got.append(ev.message.params["data"])

    token = bind_owner(owner)
    try:
        return await store.replay_events_after(after, send), got
    finally:
        unbind_owner(token)


async def test_each_session_has_its_own_streams_even_with_the_same_request_ids() -> None:
    store = make()
    alice, bob = Owner(1), Owner(2)
    a0 = await put(store, alice, "1", None)
    b0 = await put(store, bob, "1", None)
    await put(store, alice, "1", "alice's")
    await put(store, bob, "1", "bob's")
    assert await replay(store, alice, a0) == ("1", ["alice's"])
    assert await replay(store, bob, b0) == ("1", ["bob's"])
    assert a0 == b0  # ids count per session (they tell nobody about other sessions' traffic) ...
    assert store.problem(bob, "2") is None and store.problem(bob, "3") is not None
    assert await replay(store, None, a0) == (None, [])  # ... and mean nothing outside a session


async def test_a_stream_keeps_its_newest_events_and_refuses_ids_it_let_go() -> None:
    store = make(max_events_per_stream=3)
    owner = Owner(1)
    ids = [await put(store, owner, "7", f"n{i}") for i in range(6)]
    assert store.kept_events == 3 and store.dropped_events == 3
    assert await replay(store, owner, ids[3]) == ("7", ["n4", "n5"])
    problem = store.problem(owner, ids[1])
    assert problem is not None and "not among this session's kept events" in problem


async def test_bytes_bound_a_stream_and_an_oversized_event_stays_only_as_a_cursor() -> None:
    store = make(max_bytes_per_stream=1024, max_bytes=4096)
    owner = Owner(1)
    first = await put(store, owner, "s", "small")
    big = await put(store, owner, "s", "x" * 5000)
    after = await put(store, owner, "s", "after")
    assert store.kept_bytes <= 1024
    assert store.problem(owner, first) is not None  # what came after it cannot be replayed whole: refused
    assert await replay(store, owner, big) == ("s", ["after"])  # a client that got the big one resumes
    assert await replay(store, owner, after) == ("s", [])


async def test_the_total_bound_lets_the_least_recently_written_streams_go_whole() -> None:
    store = make(max_events_per_stream=4, max_events=8)
    owner = Owner(1)
    firsts = []
    for n in range(4):  # one call after another, each a priming event and three notes
        firsts.append(await put(store, owner, f"r{n}", None))
        for i in range(3):
            await put(store, owner, f"r{n}", f"r{n}-{i}")
        assert store.kept_events <= 8
    assert store.kept_events == 8
    assert store.problem(owner, firsts[0]) is not None and store.problem(owner, firsts[1]) is not None
    assert await replay(store, owner, firsts[2]) == ("r2", ["r2-0", "r2-1", "r2-2"])
    assert await replay(store, owner, firsts[3]) == ("r3", ["r3-0", "r3-1", "r3-2"])


async def test_a_stream_not_written_for_the_ttl_is_forgotten() -> None:
    clock = Clock()
    store = make(clock, ttl_s=60)
    owner = Owner(1)
    old = await put(store, owner, "old", "old")
    clock.now += 30
    fresh = await put(store, owner, "fresh", "fresh")
    clock.now += 31
    assert store.problem(owner, old) is not None  # 61 s unwritten
    assert store.problem(owner, fresh) is None
    await put(store, owner, "other", "x")
    assert store.kept_events == 2


async def test_events_written_during_a_replay_are_sent_too_once() -> None:
    store = make()
    owner = Owner(1)
    start = await put(store, owner, "9", None)
    await put(store, owner, "9", "a")
    got: list[str] = []

    async def send(ev: EventMessage) -> None:
        assert isinstance(ev.message, JSONRPCNotification) and ev.message.params is not None
        got.append(ev.message.params["data"])
        if len(got) == 1:
            await put(store, owner, "9", "b")  # arrives while the replay sends

    token = bind_owner(owner)
    try:
        assert await store.replay_events_after(start, send) == "9"
    finally:
        unbind_owner(token)
    assert got == ["a", "b"]


async def test_a_session_that_ended_is_forgotten_with_its_events() -> None:
    store = make()
    alice, bob = Owner(1), Owner(2)
    await put(store, alice, "1", "a")
    await put(store, bob, "1", "b")
    store.forget(alice)
    assert store.kept_events == 1 and store.problem(alice, "1") is not None and store.problem(bob, "1") is None


@pytest.mark.parametrize(
    ("resume", "key", "words"),
    [
        ("{max_events_per_stream: 0}", "max_events_per_stream", "must be >= 1"),
        ("{retry_ms: 10}", "retry_ms", "100"),
        ("{ttl_s: -1}", "ttl_s", "must be > 0"),
        ("{max_events_per_stream: 500, max_events: 100}", "max_events_per_stream", "max_events"),
        ("{max_bytes_per_stream: 9000000, max_bytes: 2000}", "max_bytes_per_stream", "raise"),
        ("{keep: 5}", "keep", "keep"),
    ],
)
def test_bad_resume_settings_are_config_errors_naming_the_key(
    tmp_path: Path, resume: str, key: str, words: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"engine:\n  mcp_server:\n    enabled: true\n    resume: {resume}\n")
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    assert f"engine.mcp_server.resume.{key}" in str(err.value) and words in str(err.value)


def test_the_defaults_resume_with_a_one_second_retry() -> None:
    cfg = McpResumeConfig()
    assert cfg.enabled and cfg.retry_ms == 1000
    assert cfg.max_events_per_stream <= cfg.max_events and cfg.max_bytes_per_stream <= cfg.max_bytes


async def test_session_owners_forget_a_deleted_session_and_one_idle_past_the_sdk_timeout() -> None:
    clock = Clock()
    store = make(clock, ttl_s=10_000)
    owners = SessionOwners(lambda: store, idle_s=100, max_sessions=10, clock=clock)

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:  # stands in for the SDK
        await store.store_event("1", note(scope["method"]))
        opened = [(b"mcp-session-id", scope["path"].encode())] if scope["method"] == "POST" else []
        status = 404 if scope["path"] == "/gone" else 200
        await send({"type": "http.response.start", "status": status, "headers": opened})
        await send({"type": "http.response.body", "body": b""})

    async def request(method: str, session: str | None = None, path: str = "/") -> None:
        headers = [(b"mcp-session-id", session.encode())] if session else []
        scope = {"type": "http", "method": method, "path": path, "headers": headers}

        async def send(message: MutableMapping[str, Any]) -> None:
            pass

        await owners.serve(scope, _never, send, app)

    await request("POST", path="a")  # opens session "a"
    await request("POST", path="b")
    await request("GET", "a")
    assert len(owners) == 2 and store.kept_events == 3
    await request("DELETE", "a")
    assert len(owners) == 1 and store.kept_events == 1  # a's events went with it
    clock.now += 101
    await request("POST", path="c")  # any request sweeps: b was idle past the SDK's timeout
    assert len(owners) == 1 and store.kept_events == 1


async def _never() -> MutableMapping[str, Any]:
    raise AssertionError("the stand-in app reads no body")
