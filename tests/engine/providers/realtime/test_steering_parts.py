"""The Gemini Live and ElevenLabs steering parts work alone, given only the narrow things they use (issue 35 item 1).

As mixins they could only be driven through a whole session (a socket, a fake server); as parts they are built
here from plain callables and small stand-ins, with no session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from engine.providers.base import ProviderError
from engine.realtime.elevenlabs_steer import ElevenLabsSteering
from engine.realtime.gemini_steer import GeminiSteering
from engine.sessions.steering import say_instruction, whisper_note


@dataclass
class _Talk:
    responding: bool = False
    caller_speaking: bool = False


@dataclass
class _Calls:
    blocking: bool = False
    waiting: bool = False
    said: list[str] = field(default_factory=list)

    async def announce(self, text: str) -> bool:
        return False

    async def say(self, text: str) -> bool:
        self.said.append(text)
        return True


@dataclass
class _Link:
    """The session's side: whether it is connected, and the texts it sent (text, why, respond)."""

    connected: bool = True
    sent: list[tuple[str, str, bool]] = field(default_factory=list)

    async def send_text(self, text: str, why: str, *, respond: bool = True) -> bool:
        self.sent.append((text, why, respond))
        return self.connected


def _gemini(talk: _Talk, link: _Link, calls: _Calls | None = None, route: Any = "clientContent") -> GeminiSteering:
    return GeminiSteering(
        "gl", route, talk, connected=lambda: link.connected, calls=lambda: calls, send_text=link.send_text
    )


async def test_gemini_steering_holds_a_line_while_the_model_answers_and_sends_it_when_the_turn_is_done() -> None:
    talk, link = _Talk(responding=True), _Link()
    steering = _gemini(talk, link)
    assert await steering.steer("say", "Welcome aboard.") == "clientContent (after the answer in progress)"
    assert link.sent == []
    talk.responding = False
    await steering.turn_done()
    assert link.sent == [(say_instruction("Welcome aboard."), "say-now", True)]


async def test_gemini_steering_holds_a_whisper_while_a_blocking_call_runs() -> None:
    calls, link = _Calls(blocking=True), _Link()
    steering = _gemini(_Talk(), link, calls, route="realtimeInput")
    assert await steering.steer("whisper", "be brief") == "realtimeInput (after the tool call in progress)"
    await steering.turn_done()
    assert link.sent == []  # the call's result comes first
    calls.blocking = False
    await steering.turn_done()
    assert link.sent == [(whisper_note("be brief"), "whisper", False)]
    assert await steering.steer("whisper", "now") == "realtimeInput (caller-side text: the model may answer it now)"


async def test_gemini_steering_refuses_when_not_connected_naming_the_provider() -> None:
    steering = _gemini(_Talk(), _Link(connected=False))
    with pytest.raises(ProviderError, match=r"gl.*not connected"):
        await steering.steer("say", "hello")
    assert await steering.say_during_tool("one moment") is None


async def test_gemini_steering_says_during_a_non_blocking_call_as_its_interim_result() -> None:
    calls = _Calls()
    steering = _gemini(_Talk(), _Link(), calls)
    assert await steering.say_during_tool("one moment") == "toolResponse (willContinue)"
    assert calls.said == ["one moment"]


@dataclass
class _Socket:
    closed: bool = False
    sent: list[dict[str, Any]] = field(default_factory=list)

    async def send_json(self, message: Mapping[str, Any]) -> None:
        self.sent.append(dict(message))


async def test_elevenlabs_steering_sends_its_events_on_the_socket_it_is_given() -> None:
    sock: _Socket | None = None
    steering = ElevenLabsSteering("el", lambda: sock)
    with pytest.raises(ProviderError, match=r"el.*not connected"):
        await steering.steer("whisper", "be brief")
    sock = _Socket()
    assert await steering.steer("whisper", "be brief") == "contextual_update"
    assert await steering.say_during_tool("one moment") == "user_message"
    assert [m["type"] for m in sock.sent] == ["contextual_update", "user_message"]
    assert sock.sent[1]["text"].endswith(say_instruction("one moment"))
