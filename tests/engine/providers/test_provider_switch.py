"""A call that moves OpenAI → Anthropic → Gemini mid-conversation keeps its tool history, valid for each API."""

from __future__ import annotations

import asyncio
import json

from anthropic_fake import AnthropicFake
from fakebase import Reply
from gemini_fake import SIGNATURE, GeminiFake
from harness import ToolBox, make_engine
from openai_chat_fake import OpenAIChatFake

from engine.providers.ids import canonical_from, provider_call_id


async def test_switch_openai_anthropic_gemini_keeps_tool_history() -> None:
    box = ToolBox()
    oa = OpenAIChatFake([Reply(calls=[("get_weather", {"city": "Paris"})]), Reply(text="18 in Paris.")])
    an = AnthropicFake(
        [
            Reply(calls=[("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "CET"})]),
            Reply(text="Oslo is cold, it is noon."),
        ]
    )
    ge = GeminiFake([Reply(calls=[("broken_tool", {"x": 3})]), Reply(text="That one failed; anything else?")])
    async with oa, an, ge:
        engine = make_engine({"oa": oa, "an": an, "ge": ge}, box, context_provider="oa")
        async with engine:
            call = await engine.start_call("desk")
            r1 = await engine.user_said(call.call_id, "Paris weather?")
            await engine.set_provider(call.call_id, "an")
            r2 = await engine.user_said(call.call_id, "Oslo weather and time?")
            await engine.set_provider(call.call_id, "ge")
            r3 = await engine.user_said(call.call_id, "Try the broken tool")
    assert (oa.errors, an.errors, ge.errors) == ([], [], [])
    assert [r1.text, r2.text, r3.text] == [
        "18 in Paris.",
        "Oslo is cold, it is noon.",
        "That one failed; anything else?",
    ]
    assert [c[0] for c in box.calls] == ["get_weather", "get_weather", "get_time", "broken_tool"]

    # Anthropic's first request carries OpenAI's round, with ids rendered from the canonical id.
    first = an.requests[0]
    uses = [
        b for m in first["messages"] if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"
    ]
    assert [(u["id"], u["name"], u["input"]) for u in uses] == [("toolu_tc_1", "get_weather", {"city": "Paris"})]
    assert an.results(first)[0]["id"] == "toolu_tc_1" and "Paris" in an.results(first)[0]["content"]

    # Gemini's last request carries all four calls, each answered in order, the failure under "error".
    last = ge.requests[-1]
    calls = [p["functionCall"] for c in last["contents"] for p in c["parts"] if "functionCall" in p]
    assert [c["id"] for c in calls] == ["tc_1", "tc_2", "tc_3", "tc_4"]
    results = ge.results(last)
    assert [r["is_error"] for r in results] == [False, False, False, True]
    assert json.loads(results[-1]["content"])["error"]["message"] == "the backend is down"
    # The current turn's call echoes Gemini's thought signature; the foreign calls carry none.
    assert ge.signatures(last) == [SIGNATURE]


def test_ids_round_trip() -> None:
    for ptype in ("openai_chat", "openai_responses", "anthropic", "gemini", "ollama"):
        pid = provider_call_id(ptype, "tc_12")
        assert canonical_from(ptype, pid) == "tc_12"
        assert len(pid) <= 40
    assert provider_call_id("anthropic", "tc_3") == "toolu_tc_3"
    assert canonical_from("anthropic", "toolu_01A09q90qw90lq917835lq9") is None
    assert len(provider_call_id("openai_chat", "tc_" + "9" * 60)) == 40


async def test_cancelling_a_request_closes_it_cleanly() -> None:
    box = ToolBox()
    fake = OpenAIChatFake([Reply(text="never", hold=True)])
    async with fake:
        engine = make_engine({"p": fake}, box)
        async with engine:
            call = await engine.start_call("desk")
            task = asyncio.ensure_future(engine.user_said(call.call_id, "hi"))
            await asyncio.wait_for(fake.held.wait(), 5)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            assert task.cancelled()
            await engine.end_call(call.call_id)
