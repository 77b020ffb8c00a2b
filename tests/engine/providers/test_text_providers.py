"""Every text provider, through the real engine, against its loopback fake server (payloads SDK-validated)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fakebase import Fail, FakeServer, Reply
from fakes import FAKES
from harness import API_KEY, ToolBox, make_engine

from engine.providers.base import ProviderError, Turn
from engine.sessions.history import ToolCallItem, ToolResultItem

TYPES = sorted(FAKES)


async def run(
    ptype: str,
    steps: list[Any],
    says: list[str],
    **extra: Any,
) -> tuple[FakeServer, ToolBox, list[Any], Any]:
    box = ToolBox()
    fake = FAKES[ptype](steps)
    async with fake:
        engine = make_engine({"p": fake}, box, **extra)
        async with engine:
            call = await engine.start_call("desk")
            replies = [await engine.user_said(call.call_id, s) for s in says]
            history = call.history.items()
    assert fake.errors == [], fake.errors
    return fake, box, replies, history


@pytest.mark.parametrize("ptype", TYPES)
async def test_single_tool_call(ptype: str) -> None:
    fake, box, replies, history = await run(
        ptype,
        [Reply(calls=[("get_weather", {"city": "Paris"})]), Reply(text="It is 18 degrees in Paris.")],
        ["Weather in Paris?"],
    )
    assert replies[0].text == "It is 18 degrees in Paris." and replies[0].tool_rounds == 1
    assert box.calls == [("get_weather", {"city": "Paris"})]
    assert len(fake.requests) == 2
    assert fake.tool_names(fake.requests[0]) == ["broken_tool", "get_time", "get_weather"]
    results = fake.results(fake.requests[1])
    assert len(results) == 1 and "18 degrees in Paris" in results[0]["content"]
    assert not results[0]["is_error"]
    call = next(i for i in history if isinstance(i, ToolCallItem))
    assert call.id == "tc_1"
    assert bool(call.provider_ids) == (ptype != "gemini")  # the Gemini API often sends no call id
    for h in fake.headers:  # credentials go in headers (or the key param), never into the body
        assert API_KEY not in json.dumps(fake.requests)
        assert any(API_KEY in v for v in h.values()) or API_KEY in fake.paths[0]


@pytest.mark.parametrize("ptype", TYPES)
async def test_parallel_tool_calls_run_concurrently(ptype: str) -> None:
    box = ToolBox()
    box.barrier = asyncio.Barrier(2)  # each tool waits for the other: sequential execution would time out
    fake = FAKES[ptype](
        [
            Reply(calls=[("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "Europe/Oslo"})]),
            Reply(text="Cold and noon."),
        ]
    )
    async with fake:
        engine = make_engine({"p": fake}, box)
        async with engine:
            call = await engine.start_call("desk")
            reply = await engine.user_said(call.call_id, "Weather and time in Oslo?")
            items = call.history.items()
    assert fake.errors == []
    assert reply.text == "Cold and noon."
    results = [i for i in items if isinstance(i, ToolResultItem)]
    assert [r.status for r in results] == ["success", "success"]
    calls = [i for i in items if isinstance(i, ToolCallItem)]
    assert len({c.group for c in calls}) == 1  # one model response, one gateway round
    sent = fake.results(fake.requests[1])
    assert len(sent) == 2 and "Oslo" in sent[0]["content"] and "noon" in sent[1]["content"]


@pytest.mark.parametrize("ptype", TYPES)
async def test_error_result_and_no_tools_after_two_error_rounds(ptype: str) -> None:
    fake, box, replies, _ = await run(
        ptype,
        [
            Reply(calls=[("broken_tool", {"x": 1})]),
            Reply(calls=[("broken_tool", {"x": 2})]),
            Reply(text="Sorry, that service is down."),
        ],
        ["Use the broken tool"],
    )
    assert replies[0].text == "Sorry, that service is down."
    assert [c[0] for c in box.calls] == ["broken_tool", "broken_tool"]
    res = fake.results(fake.requests[1])
    assert "the backend is down" in res[0]["content"] and res[0]["is_error"] in (True, None)
    assert [fake.tool_mode(r) for r in fake.requests] == ["auto", "auto", fake.no_tools_mode]
    assert replies[0].meta.get("tools_withheld") == "errors"


@pytest.mark.parametrize("ptype", TYPES)
async def test_max_tool_rounds_cap(ptype: str) -> None:
    steps = [Reply(calls=[("get_time", {"zone": f"Z{i}"})]) for i in range(2)] + [Reply(text="Enough.")]
    fake, box, replies, _ = await run(ptype, steps, ["loop"], max_tool_rounds=2)
    assert replies[0].text == "Enough." and len(box.calls) == 2
    assert fake.tool_mode(fake.requests[2]) == fake.no_tools_mode


@pytest.mark.parametrize("ptype", TYPES)
async def test_streamed_text_reaches_on_text(ptype: str) -> None:
    box = ToolBox()
    fake = FAKES[ptype]([Reply(text="Hello there, streaming works fine.")])
    async with fake:
        engine = make_engine({"p": fake}, box)
        async with engine:
            call = await engine.start_call("desk")
            pieces: list[str] = []
            session = engine.providers["p"].open_session(call)
            view = engine.tool_view(call)

            class NoTools:
                async def call_tools(self, calls: Any) -> list[ToolResultItem]:
                    raise AssertionError("no tools expected")

            call.history.add_message("user", "hi")
            turn = Turn(call, "sys", call.history.items(), view, NoTools(), on_text=pieces.append)
            reply = await session.run_turn(turn)
            await session.aclose()
    assert fake.errors == []
    assert reply.text == "Hello there, streaming works fine."
    assert len(pieces) >= 2 and "".join(pieces) == reply.text
    assert fake.is_streamed(fake.requests[0], fake.paths[0])


@pytest.mark.parametrize("ptype", TYPES)
async def test_non_streaming_mode(ptype: str) -> None:
    fake, box, replies, _ = await run(
        ptype,
        [Reply(calls=[("get_weather", {"city": "Rome"})]), Reply(text="Warm.")],
        ["Rome?"],
        options={"stream": False},
    )
    assert replies[0].text == "Warm." and box.calls == [("get_weather", {"city": "Rome"})]
    assert not fake.is_streamed(fake.requests[0], fake.paths[0])


@pytest.mark.parametrize("ptype", TYPES)
async def test_429_then_success(ptype: str) -> None:
    fake, _, replies, _ = await run(
        ptype,
        [Fail(429, "Rate limit reached", retry_after="0"), Fail(503, "overloaded"), Reply(text="Fine now.")],
        ["hi"],
    )
    assert replies[0].text == "Fine now." and len(fake.requests) == 3
    assert fake.requests[0] == fake.requests[2]


@pytest.mark.parametrize("ptype", TYPES)
async def test_400_reports_the_provider_message(ptype: str) -> None:
    box = ToolBox()
    fake = FAKES[ptype](
        [
            Fail(400, "Invalid 'tools[0].name': string does not match pattern"),
            Fail(401, f"Incorrect API key provided: {API_KEY}"),
        ]
    )
    async with fake:
        engine = make_engine({"p": fake}, box)
        async with engine:
            call = await engine.start_call("desk")
            session = engine.providers["p"].open_session(call)
            call.history.add_message("user", "hi")
            turn = Turn(call, "sys", call.history.items(), engine.tool_view(call), None)  # type: ignore[arg-type]
            with pytest.raises(ProviderError, match="does not match pattern") as err:
                await session.run_turn(turn)
            assert err.value.status == 400
            with pytest.raises(ProviderError, match="Incorrect API key") as err:
                await session.run_turn(turn)
            assert err.value.status == 401 and API_KEY not in str(err.value)
            await session.aclose()
    assert len(fake.requests) == 2  # 4xx are not retried


@pytest.mark.parametrize("ptype", TYPES)
async def test_apply_next_turn(ptype: str) -> None:
    box = ToolBox()
    fake = FAKES[ptype]([Reply(text="one"), Reply(text="two")])
    async with fake:
        engine = make_engine({"p": fake}, box)
        async with engine:
            call = await engine.start_call("desk")
            await engine.user_said(call.call_id, "first")
            engine.set_tool_enabled(call.call_id, "get_time", False, apply="next_turn")
            await engine.user_said(call.call_id, "second")
    assert fake.errors == []
    assert "get_time" in fake.tool_names(fake.requests[0])
    assert fake.tool_names(fake.requests[1]) == ["broken_tool", "get_weather"]


@pytest.mark.parametrize("ptype", TYPES)
async def test_apply_now_restarts_the_turn(ptype: str) -> None:
    box = ToolBox()
    fake = FAKES[ptype]([Reply(text="stale answer", hold=True), Reply(text="fresh answer")])
    async with fake:
        engine = make_engine({"p": fake}, box)
        async with engine:
            call = await engine.start_call("desk")
            task = asyncio.ensure_future(engine.user_said(call.call_id, "hello"))
            await asyncio.wait_for(fake.held.wait(), 5)
            assert engine.set_tool_enabled(call.call_id, "get_weather", False, apply="now") is True
            reply = await asyncio.wait_for(task, 5)
            users = [i for i in call.history.items() if getattr(i, "role", None) == "user"]
    assert fake.errors == []
    assert reply.text == "fresh answer" and len(users) == 1
    assert "get_weather" in fake.tool_names(fake.requests[0])
    assert "get_weather" not in fake.tool_names(fake.requests[1])
