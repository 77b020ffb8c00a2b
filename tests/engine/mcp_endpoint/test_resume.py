"""Resumable SSE streams of the engine's MCP endpoint (SEP-1699), over raw HTTP against the loopback endpoint.

A client whose tools/call stream drops reconnects with ``Last-Event-ID`` and gets what it missed exactly once and
the result; an event id of another session, or one that is not an event id at all, is refused with a clear 400;
a client that never resumes does not make the endpoint keep more events than its bounds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from mcp_endpoint_helpers import TOKEN, endpoint_settings

from engine.app import Engine
from engine.http.server import HttpServer
from engine.mcp_endpoint.component import McpEndpoint
from engine.mcp_endpoint.on_demand import EndpointSlot
from engine.mcp_endpoint.results import close_stream, report_progress
from engine.tools.base import FunctionTool, Tool, ToolDefinition, ToolExecutionContext, ToolResult
from tests.waiting import wait_until

VERSION = "2025-11-25"
EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass
class Gate:
    """The gated tool reports step 1, waits for ``open``, reports step 2 and returns."""

    open: asyncio.Event = field(default_factory=asyncio.Event)
    finished: asyncio.Event = field(default_factory=asyncio.Event)


def tools(gate: Gate, chatter: int) -> list[Tool]:
    async def gated(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        await report_progress(1, 2, "step 1")
        await gate.open.wait()
        await report_progress(2, 2, "step 2")
        gate.finished.set()
        return ToolResult.success("gated done")

    async def chatty(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        for i in range(chatter):
            await report_progress(i + 1, chatter, f"line {i + 1} " + "x" * 200)
        return ToolResult.success("chatty done")

    async def polling(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        await report_progress(1, 1, "before the break")
        closed = await close_stream()
        return ToolResult.success(f"closed: {closed}")

    return [
        FunctionTool(ToolDefinition(name="polling", description="Ends its stream.", input_schema=EMPTY), polling),
        FunctionTool(ToolDefinition(name="gated", description="Waits for the test.", input_schema=EMPTY), gated),
        FunctionTool(ToolDefinition(name="chatty", description="Many progress notes.", input_schema=EMPTY), chatty),
    ]


@dataclass
class Served:
    url: str
    endpoint: McpEndpoint
    gate: Gate
    engine: Engine


@asynccontextmanager
async def served(chatter: int = 3, **mcp: Any) -> AsyncIterator[Served]:
    gate = Gate()
    settings = endpoint_settings(expose=["gated", "chatty", "polling"], **mcp)
    async with Engine(settings, extra_tools=tools(gate, chatter), serve_http=True) as engine:
        http = next(c for c in engine.components if isinstance(c, HttpServer))
        slot = next(c for c in engine.components if isinstance(c, EndpointSlot))
        endpoint = slot.endpoint
        assert endpoint is not None  # an engine serving HTTP has its endpoint
        yield Served(f"{http.url}{settings.engine.mcp_server.path}", endpoint, gate, engine)


@dataclass
class Event:
    id: str | None
    data: str
    retry: int | None

    def json(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.data)
        return parsed


async def events(resp: aiohttp.ClientResponse) -> AsyncIterator[Event]:
    """The SSE events of a response, as they arrive."""
    eid: str | None = None
    data: list[str] = []
    retry: int | None = None
    async for raw in resp.content:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if eid is not None or data:
                yield Event(eid, "\n".join(data), retry)
            eid, data, retry = None, [], None
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "id":
            eid = value
        elif name == "data":
            data.append(value)
        elif name == "retry":
            retry = int(value)


def headers(session: str | None = None, **extra: str) -> dict[str, str]:
    h = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": VERSION,
    }
    if session:
        h["Mcp-Session-Id"] = session
    return {**h, **extra}


async def open_session(http: aiohttp.ClientSession, url: str) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    async with http.post(url, data=json.dumps(init), headers=headers()) as r:
        assert r.status == 200, await r.text()
        session = r.headers["Mcp-Session-Id"]
        await r.read()
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    async with http.post(url, data=json.dumps(note), headers=headers(session)) as r:
        assert r.status == 202, await r.text()
    return session


def call(request_id: int, tool: str) -> str:
    params = {"name": tool, "arguments": {}, "_meta": {"progressToken": f"p{request_id}"}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


async def get(http: aiohttp.ClientSession, url: str, session: str, last_event_id: str) -> tuple[int, str]:
    async with http.get(url, headers=headers(session, **{"Last-Event-ID": last_event_id})) as r:
        return r.status, await r.text()


async def test_a_dropped_call_stream_resumes_with_the_missed_events_exactly_once_and_the_result() -> None:
    async with served() as s, aiohttp.ClientSession() as http:
        session = await open_session(http, s.url)
        store = s.endpoint.events
        assert store is not None
        resp = await http.post(s.url, data=call(7, "gated"), headers=headers(session))
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
        seen: list[Event] = []
        async for ev in events(resp):
            seen.append(ev)
            if ev.data:
                break
        priming, step1 = seen
        assert priming.id and priming.data == "" and priming.retry == 1000  # the SSE retry field, first event
        assert step1.id and step1.json()["params"]["progress"] == 1
        kept = store.kept_events
        resp.close()  # the client's connection drops mid-call

        s.gate.open.set()
        await s.gate.finished.wait()
        await wait_until(lambda: store.kept_events >= kept + 2, what="step 2 and the result kept for the replay")

        got: list[Event] = []
        async with http.get(s.url, headers=headers(session, **{"Last-Event-ID": step1.id})) as r:
            assert r.status == 200
            async for ev in events(r):
                got.append(ev)
                if ev.data and "result" in ev.json():
                    break
        bodies = [ev.json() for ev in got if ev.data]
        assert [b.get("method") for b in bodies] == ["notifications/progress", None]  # step 2 once, then the result
        assert bodies[0]["params"]["progress"] == 2
        assert bodies[1]["id"] == 7 and bodies[1]["result"]["structuredContent"]["message"] == "gated done"
        ids = [int(ev.id) for ev in got if ev.data and ev.id]
        assert all(i > int(step1.id) for i in ids) and ids == sorted(set(ids))


async def test_a_tool_that_closes_its_stream_is_resumed_by_the_client_for_the_result() -> None:
    async with served() as s, aiohttp.ClientSession() as http:
        session = await open_session(http, s.url)
        async with http.post(s.url, data=call(5, "polling"), headers=headers(session)) as r:
            before = [ev async for ev in events(r)]  # the server ends this stream before the result
        assert before and not any(ev.data and "result" in ev.json() for ev in before)
        last = before[-1].id
        assert last is not None
        missed: list[dict[str, Any]] = []
        async with http.get(s.url, headers=headers(session, **{"Last-Event-ID": last})) as r:
            assert r.status == 200
            async for ev in events(r):
                if ev.data:
                    missed.append(ev.json())
                    if "result" in missed[-1]:
                        break
        progress = [m for m in missed if m.get("method") == "notifications/progress"]
        assert len(progress) + sum(ev.data != "" for ev in before) == 1  # the progress note once, on one stream
        assert missed[-1]["id"] == 5 and missed[-1]["result"]["structuredContent"]["message"] == "closed: True"
    assert await close_stream() is False  # outside an MCP call there is no stream to close


async def test_another_sessions_event_id_is_refused_and_nothing_of_it_leaks() -> None:
    async with served() as s, aiohttp.ClientSession() as http:
        alice = await open_session(http, s.url)
        bob = await open_session(http, s.url)
        s.gate.open.set()
        async with http.post(s.url, data=call(1, "gated"), headers=headers(alice)) as r:
            alice_events = [ev async for ev in events(r)]
        first = alice_events[0]
        assert first.id is not None and first.data == ""

        status, body = await get(http, s.url, bob, first.id)
        assert status == 400
        assert "not among this session's" in body and "gated" not in body and "step" not in body
        # the same id is Alice's to resume from: she gets her call's events after it
        async with http.get(s.url, headers=headers(alice, **{"Last-Event-ID": first.id})) as r:
            assert r.status == 200
            async for ev in events(r):
                if ev.data and "result" in ev.json():
                    assert ev.json()["id"] == 1
                    break


@pytest.mark.parametrize("garbage", ["abc", "-1", "1e3", " 5", "9" * 400, "12345678901234567890123"])
async def test_a_garbage_last_event_id_is_a_clear_400_not_a_500(garbage: str) -> None:
    async with served() as s, aiohttp.ClientSession() as http:
        session = await open_session(http, s.url)
        status, body = await get(http, s.url, session, garbage)
        assert status == 400, body
        assert "Last-Event-ID" in body
        assert len(body) < 600  # a long value is not echoed whole


async def test_a_client_that_never_resumes_does_not_grow_the_kept_events() -> None:
    bounds = {"max_events_per_stream": 8, "max_events": 30, "max_bytes_per_stream": 4096, "max_bytes": 20_000}
    async with served(chatter=60, resume=bounds) as s, aiohttp.ClientSession() as http:
        store = s.endpoint.events
        assert store is not None
        session = await open_session(http, s.url)
        for n in range(12):
            async with http.post(s.url, data=call(100 + n, "chatty"), headers=headers(session)) as r:
                assert [ev async for ev in events(r)][-1].json()["id"] == 100 + n
            assert store.kept_events <= 30 and store.kept_bytes <= 20_000
            assert store.largest_stream <= 8
        assert store.dropped_events >= 12 * 60 - 30  # every call's chatter went through and was let go


async def test_resume_off_keeps_nothing_and_refuses_a_last_event_id_clearly() -> None:
    async with served(resume={"enabled": False}) as s, aiohttp.ClientSession() as http:
        session = await open_session(http, s.url)
        s.gate.open.set()
        async with http.post(s.url, data=call(3, "gated"), headers=headers(session)) as r:
            got = [ev async for ev in events(r)]
        assert all(ev.id is None for ev in got) and got[-1].json()["id"] == 3
        status, body = await get(http, s.url, session, "1")
        assert status == 400 and "engine.mcp_server.resume.enabled" in body


async def test_a_reload_sets_the_retry_and_resuming_for_sessions_opened_after_it() -> None:
    async with served() as s, aiohttp.ClientSession() as http:
        s.gate.open.set()
        await s.engine.reload(endpoint_settings(expose=["gated", "chatty", "polling"], resume={"retry_ms": 2500}))
        session = await open_session(http, s.url)
        async with http.post(s.url, data=call(1, "gated"), headers=headers(session)) as r:
            first, *_ = [ev async for ev in events(r)]
        assert first.retry == 2500
        await s.engine.reload(endpoint_settings(expose=["gated", "chatty", "polling"], resume={"enabled": False}))
        session = await open_session(http, s.url)
        async with http.post(s.url, data=call(2, "gated"), headers=headers(session)) as r:
            got = [ev async for ev in events(r)]
        assert all(ev.id is None for ev in got) and got[-1].json()["id"] == 2
