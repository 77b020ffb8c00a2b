"""Barge-in (overlapping caller audio), slow-tool announcements and the pipeline provider on a voice call.

A "vault" context on a ``type: pipeline`` provider whose brain is a small scripted provider; its one tool is an
in-process FunctionTool whose ToolDefinition sets slow_response_threshold_ms, so the budget layer asks for the
announcement and the voice driver speaks it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import ContextConfig, ProviderConfig
from engine.events import Event
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult
from engine.voice.pipeline import VoiceCall
from engine.voice.stt import Recognizer
from engine.voice.wav_backend import WavBackend, read_wav
from tests.engine.voice.helpers import DEMO_CONFIG, RATE, caller_wav, demo_settings, has_speech, silent

SCRIPT = """
greeting: "Vault line."
intents:
  - name: vault
    patterns: ['\\bvault\\b']
    examples: ["check the vault"]
    tools: [{name: slow_lookup}]
    reply: "{result}"
  - name: bye
    patterns: ['\\bgoodbye\\b']
    examples: ["goodbye"]
    tools: [{name: hangup_call, args: {farewell_message: "Bye now, see you soon."}}]
fallback: "Say check the vault."
"""
ANSWER = "The vault holds three gems, two rubies and an emerald, guarded by a sleepy old dragon."
ANNOUNCEMENT = "Hold on, I am checking the vault for you."


@pytest.fixture(scope="module")
def recognizer() -> Recognizer:
    return Recognizer()


def _engine(tmp_path: Path, delay_s: float) -> Engine:
    settings = demo_settings(tmp_path)
    script = tmp_path / "vault.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    settings.mcp.enabled = False  # this context needs no MCP server
    settings.providers["vault_script"] = ProviderConfig(type="scripted", script=str(script))
    settings.providers["vault_voice"] = ProviderConfig(
        type="pipeline", brain="vault_script", voice="en-us", options={"rate": 190, "barge_in_ms": 60}
    )
    settings.contexts["vault"] = ContextConfig(provider="vault_voice", tools=["slow_lookup", "hangup_call"])

    async def lookup(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        await asyncio.sleep(delay_s)
        return ToolResult.success(ANSWER)

    tool = FunctionTool(
        ToolDefinition(
            name="slow_lookup",
            description="Look in the vault (slow).",
            slow_response_threshold_ms=100,
            slow_response_message=ANNOUNCEMENT,
        ),
        lookup,
    )
    return Engine(settings, config_path=DEMO_CONFIG, extra_tools=[tool])


async def _run(engine: Engine, tmp_path: Path, recognizer: Recognizer) -> tuple[VoiceCall, list[Event]]:
    async with engine:
        sub = engine.bus.subscribe(maxsize=10_000)
        backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", sample_rate=RATE, timeline=True)
        call = VoiceCall(engine.voice_parts, backend, "vault", recognizer=recognizer)
        await call.run()
        events = sub.drain()
        sub.close()
    return call, events


def _said(events: list[Event], role: str) -> list[str]:
    return [e.text for e in events if e.type == "transcript.added" and e.role == role]  # type: ignore[attr-defined]


async def test_slow_tool_announced_once_then_answer(tmp_path: Path, recognizer: Recognizer) -> None:
    spoken = caller_wav(
        tmp_path / "in.wav", 2.0, [("check the vault", "en-us", 175, 9.0), ("goodbye", "en-us", 175, 3)]
    )
    call, events = await _run(_engine(tmp_path, delay_s=1.0), tmp_path, recognizer)

    assert call.options.rate == 190  # the pipeline provider's voice options
    kinds = [(p.kind, p.text) for p in call.playbacks]
    assert kinds == [
        ("greeting", "Vault line."),
        ("announcement", ANNOUNCEMENT),
        ("reply", ANSWER),
        ("farewell", "Bye now, see you soon."),
    ]
    played = [e for e in events if e.type == "announcement.played"]
    assert [(e.text, e.call_id) for e in played] == [(ANNOUNCEMENT, call.call_id)]  # type: ignore[attr-defined]
    requested = [e for e in events if e.type == "announcement.requested"]
    assert len(requested) == 1
    _, announcement, answer, _ = call.playbacks
    assert announcement.completed and answer.completed
    assert announcement.start_sample is not None and announcement.end_sample is not None
    assert answer.start_sample is not None and answer.end_sample is not None
    # the announcement starts when the caller's utterance has ended; the answer waits for it to finish
    assert spoken[0].end + 0.5 < announcement.start_sample / RATE < spoken[0].end + 0.9
    assert answer.start_sample >= announcement.end_sample
    assert (answer.start_sample - announcement.end_sample) / RATE < 0.05
    out = read_wav(tmp_path / "out.wav")
    a0, a1 = announcement.start_sample / RATE, announcement.end_sample / RATE
    assert has_speech(out, a0, a0 + 1.0) and has_speech(out, answer.start_sample / RATE, answer.start_sample / RATE + 1)
    assert _said(events, "assistant")[1] == ANSWER  # the announcement is not part of the transcript
    assert a1 - a0 > 1.0


async def test_barge_in_over_announcement_abandons_the_turn(tmp_path: Path, recognizer: Recognizer) -> None:
    # "goodbye" starts about half a second into the announcement, while the tool is still running (10 s)
    spoken = caller_wav(
        tmp_path / "in.wav", 2.0, [("check the vault", "en-us", 175, 1.2), ("goodbye", "en-us", 175, 3)]
    )
    call, events = await _run(_engine(tmp_path, delay_s=10.0), tmp_path, recognizer)

    assert call.barge_ins == 1
    _, announcement, farewell = call.playbacks
    assert announcement.kind == "announcement" and announcement.interrupted and not announcement.completed
    assert announcement.end_sample is not None and farewell.start_sample is not None
    onset = spoken[1].start
    assert announcement.start_sample is not None and announcement.start_sample / RATE < onset
    stop = announcement.end_sample / RATE
    assert 0.0 < stop - onset <= 0.1  # playback stopped within 100 ms of the caller's voice
    assert not [e for e in events if e.type == "announcement.played"]
    # the vault turn was abandoned: its answer was never spoken; "goodbye" started a new turn
    assert _said(events, "user") == ["check the vault", "goodbye"]
    assert _said(events, "assistant") == ["Vault line.", "Bye now, see you soon."]
    assert farewell.kind == "farewell" and farewell.completed and call.end_reason == "hangup"
    out = read_wav(tmp_path / "out.wav")
    assert has_speech(out, announcement.start_sample / RATE, onset)
    assert silent(out, stop, farewell.start_sample / RATE)


async def test_barge_in_over_the_answer_cuts_it_off(tmp_path: Path, recognizer: Recognizer) -> None:
    # the answer (~5 s) starts ~0.7 s after "check the vault" ends; "goodbye" starts 2 s after that
    spoken = caller_wav(
        tmp_path / "in.wav", 2.0, [("check the vault", "en-us", 175, 2.7), ("goodbye", "en-us", 175, 3)]
    )
    call, events = await _run(_engine(tmp_path, delay_s=0.0), tmp_path, recognizer)

    assert call.barge_ins == 1
    kinds = [p.kind for p in call.playbacks]
    assert kinds == ["greeting", "reply", "farewell"]
    _, answer, farewell = call.playbacks
    assert answer.interrupted and answer.start_sample is not None and answer.end_sample is not None
    onset = spoken[1].start
    assert answer.start_sample / RATE < onset
    assert 0.0 < answer.end_sample / RATE - onset <= 0.1
    assert _said(events, "user") == ["check the vault", "goodbye"]
    assert ANSWER in _said(events, "assistant")  # the turn completed (its text is in history), the audio was cut
    out = read_wav(tmp_path / "out.wav")
    assert farewell.start_sample is not None and farewell.completed
    assert has_speech(out, answer.start_sample / RATE, onset)
    assert silent(out, answer.end_sample / RATE, farewell.start_sample / RATE)
    assert has_speech(out, farewell.start_sample / RATE, farewell.start_sample / RATE + 0.8)


async def test_announcer_skips_once_the_answer_is_ready_and_never_repeats(tmp_path: Path) -> None:
    from engine.events import AnnouncementRequested, EventBus
    from engine.voice.announcer import Announcer
    from engine.voice.pacing import Pacer
    from engine.voice.speaker import Speaker
    from engine.voice.tts import Synthesizer

    bus = EventBus()
    sub = bus.subscribe()
    backend = WavBackend(output_path=tmp_path / "out.wav", sample_rate=RATE)
    speaker = Speaker(backend, Synthesizer(sample_rate=RATE), Pacer(backend))
    phase = {"turn": 1, "thinking": True}
    announcer = Announcer(bus, speaker, lambda: phase["turn"] if phase["thinking"] else None)

    def request(text: str) -> bool:
        return announcer.request(AnnouncementRequested(call_id="c1", text=text, exposed_name="slow_lookup"))

    # an announcement queued behind the greeting drops itself if the answer is ready when its turn comes
    greeting = asyncio.ensure_future(speaker.say("Welcome to the line.", "greeting", 0))
    await asyncio.sleep(0)
    assert speaker.playing
    assert request("One moment.") is True  # turn 1 is thinking: queued behind the greeting …
    assert request("Again?") is False  # … and never twice in one turn
    phase["thinking"] = False  # the answer is ready before the announcement got the speaker
    answer = asyncio.ensure_future(speaker.say("Here is the answer.", "reply", 1))
    await asyncio.gather(greeting, answer)
    await announcer.aclose()
    # no turn thinking at all: skipped at once
    assert request("Late.") is False
    # next turn, still thinking: spoken in full, then announcement.played
    phase.update(turn=2, thinking=True)
    assert request("Still checking.") is True
    await asyncio.gather(*announcer._tasks)
    await backend.close()
    assert announcer.played == ["Still checking."]
    assert announcer.skipped == ["Again?", "One moment.", "Late."]
    assert [(p.kind, p.text, p.completed) for p in speaker.log] == [
        ("greeting", "Welcome to the line.", True),
        ("reply", "Here is the answer.", True),
        ("announcement", "Still checking.", True),
    ]
    assert [(e.type, e.text) for e in sub.drain()] == [("announcement.played", "Still checking.")]  # type: ignore[attr-defined]
