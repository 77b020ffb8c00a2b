"""Live steering on every text provider, through the real engine and its loopback fake (payloads SDK-validated):
a whisper reaches the next turn's request as system/developer content and no later request; a say-now line is
the agent's words in every request after it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fakebase import Reply
from fakes import FAKES
from harness import ToolBox, make_engine

from engine.events import Event, SteeringInjected, Subscription, TranscriptAdded
from engine.sessions.history import Message

TYPES = sorted(FAKES)
WHISPER = "The caller is the king in disguise; be extra polite."
LINE = "Hold on, a raven just landed on the window."


def system_text(ptype: str, request: dict[str, Any]) -> str:
    """Where each API carries the system prompt (the whisper must be there, not in a message the caller's)."""
    if ptype == "anthropic":
        return json.dumps(request["system"])
    if ptype == "gemini":
        return json.dumps(request["systemInstruction"])
    if ptype == "openai_responses":
        return json.dumps(request["instructions"])
    return json.dumps([m for m in request["messages"] if isinstance(m, dict) and m.get("role") == "system"])


@pytest.mark.parametrize("ptype", TYPES)
async def test_a_whisper_steers_the_next_request_only(ptype: str) -> None:
    fake = FAKES[ptype]([Reply(text="Good day, your majesty."), Reply(text="Certainly.")])
    async with fake:
        engine = make_engine({"p": fake}, ToolBox())
        async with engine:
            sub = engine.bus.subscribe(types={SteeringInjected.type})
            call = await engine.start_call("desk")
            via = await engine.whisper(call.call_id, f"  {WHISPER}\n")
            await engine.user_said(call.call_id, "Hello?")
            await engine.user_said(call.call_id, "Can I order bread?")
            history = call.history.items()
            steered = [e async for e in _drain(sub)]
    assert fake.errors == [], fake.errors
    assert via == "system prompt of the next turn"
    first, second = fake.requests
    assert WHISPER in system_text(ptype, first) and "You are a test agent." in system_text(ptype, first)
    assert WHISPER not in json.dumps(second)
    assert all(WHISPER not in getattr(i, "text", "") for i in history)  # never part of the conversation
    (ev,) = steered
    assert isinstance(ev, SteeringInjected)
    assert (ev.kind, ev.text, ev.hidden, ev.call_id) == ("whisper", WHISPER, True, call.call_id)
    assert [(n.kind, n.text) for n in call.steering] == [("whisper", WHISPER)]


@pytest.mark.parametrize("ptype", TYPES)
async def test_a_say_now_line_is_the_agents_words_from_then_on(ptype: str) -> None:
    fake = FAKES[ptype]([Reply(text="A raven? How odd.")])
    async with fake:
        engine = make_engine({"p": fake}, ToolBox())
        async with engine:
            sub = engine.bus.subscribe(types={SteeringInjected.type, TranscriptAdded.type})
            call = await engine.start_call("desk")
            assert await engine.say_now(call.call_id, LINE) == "text"
            await engine.user_said(call.call_id, "A what?")
            history = call.history.items()
            events = [e async for e in _drain(sub)]
    assert fake.errors == [], fake.errors
    messages = [(i.role, i.text) for i in history if isinstance(i, Message)]
    assert messages[:3] == [("assistant", "Hello, test desk."), ("assistant", LINE), ("user", "A what?")]
    (request,) = fake.requests
    body = json.dumps(request)
    assert LINE in body and body.index(LINE) < body.index("A what?")  # in order, as the agent's turn
    kinds = [(e.type, getattr(e, "role", getattr(e, "kind", ""))) for e in events]
    assert kinds[:3] == [
        ("transcript.added", "assistant"),
        ("steering.injected", "say"),
        ("transcript.added", "assistant"),
    ]


async def _drain(sub: Subscription) -> AsyncIterator[Event]:
    """What the subscription holds now (the calls above have published everything by the time they return)."""
    for ev in sub.drain():
        yield ev
