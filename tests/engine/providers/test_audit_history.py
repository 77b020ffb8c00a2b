"""Audit findings 5 and 6 (issue #14 §4): what a response carried besides its tool calls survives in the
canonical history — the assistant's words before a ``tool_use`` (Anthropic wants them back) and Gemini's
``thoughtSignature`` (echoed in every later Gemini request, also after the call moved to another provider)."""

from __future__ import annotations

from typing import Any

import pytest
from fakebase import Reply
from fakes import FAKES
from gemini_fake import SIGNATURE, GeminiFake
from harness import ToolBox, make_engine
from openai_chat_fake import OpenAIChatFake

from engine.sessions.history import Message, ToolCallItem

PREAMBLE = "Let me check the weather for you."


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


async def test_anthropic_text_before_tool_use_is_sent_back() -> None:
    box = ToolBox()
    fake = FAKES["anthropic"](
        [Reply(text=PREAMBLE, calls=[("get_weather", {"city": "Oslo"})]), Reply(text="It is 18 degrees.")]
    )
    async with fake:
        engine = make_engine({"p": fake}, box)
        async with engine:
            call = await engine.start_call("desk")
            reply = await engine.user_said(call.call_id, "Weather in Oslo?")
            items = call.history.items()
    assert fake.errors == [] and reply.text == "It is 18 degrees."
    second = fake.requests[1]["messages"]
    turn = next(m for m in second if any(b["type"] == "tool_use" for b in _blocks(m["content"])))
    blocks = _blocks(turn["content"])
    assert turn["role"] == "assistant"
    assert [b["type"] for b in blocks] == ["text", "tool_use"] and blocks[0]["text"] == PREAMBLE
    # The canonical history holds the words, before the call (any provider renders them).
    said = [i for i in items if isinstance(i, Message | ToolCallItem)]
    assert [type(i).__name__ for i in said[-3:]] == ["Message", "ToolCallItem", "Message"]
    assert isinstance(said[-3], Message) and said[-3].text == PREAMBLE


@pytest.mark.parametrize("ptype", ["openai_chat", "openai_responses", "gemini", "ollama"])
async def test_other_providers_carry_the_words_before_their_calls(ptype: str) -> None:
    box = ToolBox()
    fake = FAKES[ptype]([Reply(text=PREAMBLE, calls=[("get_weather", {"city": "Oslo"})]), Reply(text="Warm.")])
    async with fake:
        engine = make_engine({"p": fake}, box)
        async with engine:
            call = await engine.start_call("desk")
            await engine.user_said(call.call_id, "Weather in Oslo?")
    assert fake.errors == []
    assert PREAMBLE in str(fake.requests[1])
    if ptype == "openai_chat":  # one assistant message with content and tool_calls, as the API returns it
        msg = next(m for m in fake.requests[1]["messages"] if m.get("tool_calls"))
        assert msg["content"] == PREAMBLE


async def test_gemini_signature_is_echoed_after_a_switch_away_and_back() -> None:
    box = ToolBox()
    ge = GeminiFake([Reply(calls=[("get_weather", {"city": "Rome"})]), Reply(text="Warm."), Reply(text="Bye.")])
    oa = OpenAIChatFake([Reply(text="It is noon.")])
    async with ge, oa:
        engine = make_engine({"ge": ge, "oa": oa}, box, context_provider="ge")
        async with engine:
            call = await engine.start_call("desk")
            await engine.user_said(call.call_id, "Rome weather?")
            await engine.set_provider(call.call_id, "oa")
            await engine.user_said(call.call_id, "Time?")
            await engine.set_provider(call.call_id, "ge")
            await engine.user_said(call.call_id, "Thanks")
            first = next(i for i in call.history.items() if isinstance(i, ToolCallItem))
    assert (ge.errors, oa.errors) == ([], [])
    assert len(ge.requests) == 3
    last = ge.requests[-1]
    parts = [p for c in last["contents"] for p in c["parts"] if "functionCall" in p]
    assert [(p["functionCall"]["name"], p.get("thoughtSignature")) for p in parts] == [("get_weather", SIGNATURE)]
    assert first.meta_for("gemini") == {"thoughtSignature": SIGNATURE} and first.meta_for("openai_chat") == {}
    # OpenAI never sees Gemini's opaque data.
    assert SIGNATURE not in str(oa.requests)
