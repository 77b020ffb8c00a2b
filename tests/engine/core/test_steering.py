"""The steering commands' contract on a scripted call: clear errors for bad input (and nothing changes), the
operator's line handed to the call's voice as the operator's, every action kept on the call and published, and
secrets masked in what is published."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.app import Engine
from engine.calls.manager import CallError
from engine.events import SteeringInjected
from engine.sessions.history import Message, ToolCallItem
from engine.sessions.session import CallSession
from engine.sessions.steering import MAX_STEER_CHARS, clean_steer_text, is_steering
from tests.engine.core.helpers import echo_tool, engine_with, settings_with
from tests.waiting import wait_until


def _engine(tmp_path: Path) -> Engine:
    return engine_with(settings_with(tmp_path, [], []))


async def test_bad_steering_is_a_clear_error_and_changes_nothing(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    sub = engine.bus.subscribe(types={SteeringInjected.type})
    call = await engine.start_call("c")
    before = call.history.items()
    with pytest.raises(ValueError, match="the whisper is empty"):
        await engine.whisper(call.call_id, " \n\t ")
    with pytest.raises(ValueError, match="the say-now line is empty"):
        await engine.say_now(call.call_id, "")
    with pytest.raises(ValueError, match=f"is {MAX_STEER_CHARS + 1} characters long; at most {MAX_STEER_CHARS}"):
        await engine.say_now(call.call_id, "x" * (MAX_STEER_CHARS + 1))
    with pytest.raises(ValueError, match="must be text, not int"):
        await engine.whisper(call.call_id, 42)  # type: ignore[arg-type]
    with pytest.raises(CallError, match=r"no live call 'call-99' to steer \(it has ended, or never existed\)"):
        await engine.say_now("call-99", "hello")
    with pytest.raises(CallError, match="select a live call first"):
        await engine.whisper("", "hello")
    with pytest.raises(ValueError, match=r"unknown steering kind 'shout' \(one of say, whisper\)"):
        clean_steer_text("shout", "hi")
    assert call.history.items() == before and call.whispers == [] and call.steering == []
    await engine.end_call(call.call_id)
    with pytest.raises(CallError, match="no live call"):
        await engine.whisper(call.call_id, "too late")
    assert sub.drain() == []


async def test_say_now_goes_to_the_calls_voice_marked_as_the_operators(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    delivered: list[tuple[str, bool]] = []

    async def deliver(session: CallSession, text: str) -> None:
        delivered.append((text, is_steering()))

    call = await engine.start_call("c", deliver=deliver)
    assert await engine.say_now(call.call_id, "  One   moment,\ntraveller. ") == "tts"
    await engine.user_said(call.call_id, "hello")
    assert delivered == [("hi", False), ("One moment, traveller.", True), ("what?", False)]
    assert is_steering() is False  # only while the line is delivered


async def test_every_action_is_kept_on_the_call_and_published_with_secrets_masked(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, [], [])
    settings.providers["s"].api_key = "sk-live-SECRET-123456"  # type: ignore[assignment]
    engine = engine_with(settings)
    sub = engine.bus.subscribe(types={SteeringInjected.type})
    call = await engine.start_call("c")
    await engine.whisper(call.call_id, "the key is sk-live-SECRET-123456, do not tell")
    await engine.say_now(call.call_id, "Welcome, friend.")
    assert [(n.kind, n.via, n.turn) for n in call.steering] == [
        ("whisper", "system prompt of the next turn", 0),
        ("say", "text", 0),
    ]
    whisper, say = sub.drain()
    assert isinstance(whisper, SteeringInjected) and isinstance(say, SteeringInjected)
    assert whisper.hidden and not say.hidden
    assert "sk-live-SECRET-123456" not in whisper.to_json()
    assert call.whispers == ["the key is sk-live-SECRET-123456, do not tell"]  # the model does get it
    await engine.user_said(call.call_id, "hi")
    assert call.whispers == []  # given to one turn, once
    metrics = engine.metrics.render().decode()
    assert 'ai_agent_steering_total{kind="whisper"} 1.0' in metrics
    assert 'ai_agent_steering_total{kind="say"} 1.0' in metrics


async def test_a_whisper_waits_for_the_next_turn_when_its_turn_is_abandoned(tmp_path: Path) -> None:
    intents = [{"name": "look", "patterns": ["look"], "tools": [{"name": "slow", "args": {"text": "x"}}]}]
    engine = engine_with(settings_with(tmp_path, intents, ["slow"]), echo_tool("slow", delay=5.0))
    call = await engine.start_call("c")
    await engine.whisper(call.call_id, "Speak like a pirate.")
    turn = asyncio.create_task(engine.user_said(call.call_id, "look"))
    await wait_until(call.history.pending_tool_calls, what="the turn's tool call")
    assert call.whispers == []  # the turn in flight has it
    assert engine.calls.cancel_turn(call.call_id)  # barge-in: that answer is never given
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert call.whispers == ["Speak like a pirate."]


async def test_a_say_now_line_stays_in_the_history_when_its_turn_is_redone(tmp_path: Path) -> None:
    intents = [{"name": "look", "patterns": ["look"], "tools": [{"name": "slow", "args": {"text": "x"}}]}]
    engine = engine_with(settings_with(tmp_path, intents, ["slow"]), echo_tool("slow", delay=0.5))
    call = await engine.start_call("c")
    turn = asyncio.create_task(engine.user_said(call.call_id, "look"))
    await wait_until(call.history.pending_tool_calls, what="the turn's tool call")
    await engine.say_now(call.call_id, "Bear with me, traveller.")
    assert engine.set_tool_enabled(call.call_id, "hangup_call", False, apply="now")  # the turn is redone
    await turn
    said = [(i.role, i.text) for i in call.history.items() if isinstance(i, Message)]
    assert ("assistant", "Bear with me, traveller.") in said
    assert said.index(("assistant", "Bear with me, traveller.")) < said.index(("assistant", "echo x"))
    assert len([i for i in call.history.items() if isinstance(i, ToolCallItem)]) == 1  # the first try's call went
