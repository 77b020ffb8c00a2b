"""The demo context by voice: espeak caller audio → WAV backend → VAD → pocketsphinx → scripted provider → real MCP
servers → espeak answer → out.wav on the caller's timeline; and the farewell's ordering against call.ended."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.app import Engine
from engine.events import CallEnded, Event
from engine.voice.phrases import normalize_text
from engine.voice.pipeline import VoiceCall
from engine.voice.stt import Recognizer
from engine.voice.wav_backend import WavBackend, read_wav
from tests.engine.voice.helpers import DEMO_CONFIG, RATE, caller_wav, demo_settings, has_speech, silent

# (phrase, espeak voice, words per minute, the tool it must run or None, seconds of silence after it)
PLAN: list[tuple[str, str, int, str | None, float]] = [
    ("hello", "en-us", 175, None, 7),
    ("roll two d six", "en-us", 140, "mcp_dice_roll", 7),
    ("roll a d twenty", "en-us+f1", 160, "mcp_dice_roll", 6),
    ("roll three d six plus two", "en-us+m1", 175, "mcp_dice_roll", 9),
    ("roll four d six keep highest three", "en-us", 220, "mcp_dice_roll", 10),
    ("what's the weather at l s z h", "en-us", 175, "mcp_aviation_atis_get_atis", 22),
    ("weather at e g l l", "en-us+m5", 150, "mcp_aviation_atis_get_atis", 23),
    ("atis for k j f k", "en-us+f1", 160, "mcp_aviation_atis_get_atis", 23),
    ("remember that grimble owes the party ten gold", "en-us", 175, "mcp_memory_remember", 9),
    ("remember that the mayor hates dragons", "en-us+m1", 175, "mcp_memory_remember", 9),
    ("what do you know about grimble", "en-us", 140, "mcp_memory_query_entities", 8),
    ("what do we know about the mayor", "en-us+m5", 150, "mcp_memory_query_entities", 8),
    ("think carefully about the rules for grappling", "en-us", 175, "mcp_rules_search_rules", 15),
    ("what are the rules for cover", "en-us", 220, "!mcp_rules_search_rules", 8),  # ! = rejected (not on tier)
    ("hi there", "en-us+m1", 175, None, 7),
    ("roll two d six", "en-us+m5", 150, "mcp_dice_roll", 6),
    ("roll a d twenty", "en-us", 220, "mcp_dice_roll", 6),
    ("hello", "en-us+f1", 160, None, 7),
    ("what's the weather at l s z h", "en-us+m1", 175, "mcp_aviation_atis_get_atis", 22),
    ("remember that grimble owes the party ten gold", "en-us+f1", 160, "mcp_memory_remember", 9),
    ("goodbye", "en-us", 175, "hangup_call", 6),
]
GREETING_S = 10.0  # the demo greeting is about 8.5 s at 170 wpm


@pytest.fixture(scope="module")
def recognizer() -> Recognizer:
    return Recognizer()


def _tool_runs(events: list[Event], call_id: str) -> list[str]:
    """Per user turn, the tool that ran ("name"), was rejected ("!name"), or None."""
    runs: list[str | None] = []
    for ev in events:
        if getattr(ev, "call_id", None) != call_id:
            continue
        if ev.type == "transcript.added" and ev.role == "user":  # type: ignore[attr-defined]
            runs.append(None)
        elif ev.type == "tool.completed" and runs:
            runs[-1] = ev.exposed_name  # type: ignore[attr-defined]
        elif ev.type == "tool.rejected" and runs:
            runs[-1] = "!" + ev.exposed_name  # type: ignore[attr-defined]
    return runs  # type: ignore[return-value]


async def test_twenty_spoken_phrases_through_the_demo(tmp_path: Path, recognizer: Recognizer) -> None:
    spoken = caller_wav(tmp_path / "in.wav", GREETING_S, [(t, v, r, gap) for t, v, r, _, gap in PLAN])
    async with Engine(demo_settings(tmp_path), config_path=DEMO_CONFIG) as engine:
        sub = engine.bus.subscribe(maxsize=10_000)
        backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", sample_rate=RATE, timeline=True)
        call = VoiceCall(engine.voice_parts, backend, "demo", recognizer=recognizer, caller_name="Robin")
        call_id = await call.run()
        events = sub.drain()
        sub.close()

    # what was recognised: every phrase, exactly, by the grammar
    assert [t.text for t in call.turns] == [normalize_text(p[0]) for p in PLAN]
    assert all(t.source == "grammar" for t in call.turns)
    # which tool ran for each turn (through the engine: tool.completed / tool.rejected events)
    assert _tool_runs(events, call_id) == [p[3] for p in PLAN]
    assert call.end_reason == "hangup" and call.barge_ins == 0

    # out.wav: the greeting at the start, then one answer after each phrase, on the caller's timeline
    out = read_wav(tmp_path / "out.wav")
    greeting, *answers = call.playbacks
    assert greeting.kind == "greeting" and greeting.start_sample == 0 and greeting.completed
    assert has_speech(out, 0.2, 1.0) and has_speech(out, 4.0, 5.0)
    assert [a.kind for a in answers] == ["reply"] * (len(PLAN) - 1) + ["farewell"]
    for said, answer in zip(spoken, answers, strict=True):
        assert answer.completed and answer.start_sample is not None and answer.end_sample is not None
        start, end = answer.start_sample / RATE, answer.end_sample / RATE
        # the answer starts once the endpointer heard the 600 ms of silence after the phrase …
        assert said.end + 0.5 < start < said.end + 0.9, (said.text, said.end, start)
        # … the agent stayed quiet while the caller spoke, and the answer is audible where the log says
        assert silent(out, said.start, said.end)
        assert has_speech(out, start, min(end, start + 1.0))
        assert silent(out, end + 0.05, end + 0.5) or end + 0.5 > out.duration
    # the call ended with the farewell: the output file ends where the farewell's audio ends
    assert answers[-1].end_sample == out.num_samples
    ended = next(e for e in events if isinstance(e, CallEnded))
    assert answers[-1].finished_wall is not None and ended.ts >= answers[-1].finished_wall


async def test_farewell_plays_in_full_before_call_ended(tmp_path: Path, recognizer: Recognizer) -> None:
    spoken = caller_wav(tmp_path / "in.wav", GREETING_S, [("goodbye", "en-us", 175, 1.0)])
    async with Engine(demo_settings(tmp_path), config_path=DEMO_CONFIG) as engine:
        sub = engine.bus.subscribe(maxsize=10_000)
        writes_at_end: list[int] = []
        backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", sample_rate=RATE, timeline=True)

        publish = engine.bus.publish

        def spy(ev: Event) -> None:  # samples in out.wav at the moment call.ended is published
            if isinstance(ev, CallEnded):
                writes_at_end.append(backend.samples_written)
            publish(ev)

        engine.bus.publish = spy  # type: ignore[method-assign,assignment]
        call = VoiceCall(engine.voice_parts, backend, "demo", recognizer=recognizer)
        await call.run()
        events = sub.drain()
    farewell = call.playbacks[-1]
    assert farewell.kind == "farewell" and farewell.completed and not farewell.interrupted
    assert farewell.text.startswith("Goodbye") and call.end_reason == "hangup"
    # the farewell input ran out 1 s after "goodbye": the farewell (~2 s) outlasts the input and still plays in full
    assert farewell.end_sample is not None and farewell.end_sample / RATE > spoken[-1].end + 1.0
    out = read_wav(tmp_path / "out.wav")
    assert out.num_samples == farewell.end_sample == writes_at_end[0]
    assert has_speech(out, farewell.end_sample / RATE - 1.0, farewell.end_sample / RATE)
    order = [e.type for e in events if e.type in ("transcript.added", "call.ended")]
    assert order[-1] == "call.ended"
