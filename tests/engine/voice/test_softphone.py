"""The Softphone controller: start/end, states, level, mute, push-to-talk (all as events on the engine's bus),
and the no-audio error path."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from engine.app import Engine
from engine.config.models import ContextConfig, ProviderConfig, Settings
from engine.events import Event, SoftphoneLevel, SoftphoneStateChanged
from engine.voice import device_backend as devmod
from engine.voice.backend import AudioBackend, AudioUnavailable
from engine.voice.device_backend import DeviceSpec
from engine.voice.pipeline import VoiceCall
from engine.voice.softphone import Softphone
from engine.voice.stt import Recognizer
from engine.voice.tts import Synthesizer
from tests.fixtures.audio_backends import FeedBackend
from tests.waiting import wait_until

SCRIPT = """
greeting: "Hi."
intents:
  - name: roll
    patterns: ['\\broll\\b']
    examples: ["roll two d six", "hello there"]
    reply: "Rolling."
fallback: "Pardon?"
"""


@pytest.fixture(scope="module")
def recognizer() -> Recognizer:
    return Recognizer()


def _settings(tmp_path: Path, push_to_talk: bool) -> Settings:
    script = tmp_path / "s.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    s = Settings()
    s.providers["brain"] = ProviderConfig(type="scripted", script=str(script))
    opts = {"push_to_talk": push_to_talk}
    s.providers["voice"] = ProviderConfig(type="pipeline", brain="brain", options=opts)
    s.contexts["desk"] = ContextConfig(provider="voice", tools=[])
    s.contexts["text"] = ContextConfig(provider="brain", tools=[])
    s.mcp.enabled = False
    return s


def _factory(made: list[FeedBackend]) -> Callable[[DeviceSpec, DeviceSpec, int, int], AudioBackend]:
    def make(i: DeviceSpec, o: DeviceSpec, rate: int, frame_ms: int) -> AudioBackend:
        b = FeedBackend(rate, frame_ms)
        made.append(b)
        return b

    return make


async def _until(pred: Callable[[], bool]) -> None:
    """Poll a condition the code under test has no event for (bounded: 10 s)."""
    await wait_until(pred)


async def test_push_to_talk_call_with_states_levels_and_mute(tmp_path: Path, recognizer: Recognizer) -> None:
    made: list[FeedBackend] = []
    async with Engine(_settings(tmp_path, push_to_talk=True)) as engine:
        sub = engine.bus.subscribe(maxsize=1000)
        phone_sub = engine.bus.subscribe(maxsize=100_000, types={SoftphoneStateChanged.type, SoftphoneLevel.type})
        phone = Softphone(
            engine.voice_parts,
            spawn=engine.spawn,
            backend_factory=_factory(made),
            recognizer=recognizer,
            level_interval_s=0.0,
        )
        call_id = await phone.start("desk")
        assert "softphone:desk" in engine.tasks.names()  # the voice call is a named task of the engine
        mic = made[0]
        await _until(lambda: phone.state == "listening")
        assert phone.push_to_talk and call_id == phone.call_id
        # audio outside push-to-talk is not heard
        speech = Synthesizer(sample_rate=16000).synthesize_blocking("roll two d six").samples
        mic.feed(speech)
        await _until(lambda: mic.mic.empty())
        assert phone.input_level_dbfs > -40
        phone.press()
        mic.feed(np.concatenate([np.zeros(3200, np.int16), speech, np.zeros(3200, np.int16)]))
        await _until(lambda: mic.mic.empty())
        phone.release()
        call = phone.call
        assert isinstance(call, VoiceCall)  # a pipeline provider: the cascaded driver
        await _until(lambda: len(call.playbacks) >= 2 and not call.speaker.playing)
        await _until(lambda: phone.state == "listening")
        # muted: even with the key down, the caller's audio is silence (no utterance)
        phone.mute(True)
        phone.press()
        mic.feed(speech)
        await _until(lambda: mic.mic.empty())
        phone.release()
        await asyncio.sleep(0.05)
        await phone.end()
        seen = phone_sub.drain()
        events: list[Event] = sub.drain()

    said = [(e.role, e.text) for e in events if e.type == "transcript.added"]  # type: ignore[attr-defined]
    assert said == [("assistant", "Hi."), ("user", "roll two d six"), ("assistant", "Rolling.")]
    call_events = [e.type for e in events if e.call_id == call_id and not e.type.startswith("softphone.")]  # type: ignore[attr-defined]
    assert call_events[-1] == "call.ended"
    states = [e.state for e in seen if isinstance(e, SoftphoneStateChanged)]
    for s in ("speaking", "listening", "hearing", "thinking", "ended", "idle"):
        assert s in states
    assert states[-1] == "idle" and phone.state == "idle" and not phone.active
    assert any(isinstance(e, SoftphoneLevel) and e.level_dbfs > -40 for e in seen)
    assert any(isinstance(e, SoftphoneStateChanged) and e.muted for e in seen)
    assert phone_sub.dropped == 0
    assert mic.played  # greeting and reply were played


async def test_no_audio_raises_with_the_fix_and_text_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recognizer: Recognizer
) -> None:
    async with Engine(_settings(tmp_path, push_to_talk=False)) as engine:
        phone = Softphone(engine.voice_parts, recognizer=recognizer)
        monkeypatch.setattr(devmod, "list_devices", lambda rescan=False: [])
        with pytest.raises(AudioUnavailable, match=r"no audio input device found.*connect a device"):
            await phone.start("desk")

        def no_portaudio() -> None:
            raise AudioUnavailable("PortAudio library not found: install libportaudio2 (apt-get install libportaudio2)")

        monkeypatch.setattr(devmod, "import_sounddevice", no_portaudio)
        with pytest.raises(AudioUnavailable, match="apt-get install libportaudio2"):
            await phone.start("desk", "USB", "USB")
        assert phone.state == "idle" and not phone.active and engine.live_calls() == []
        with pytest.raises(RuntimeError, match="no call"):
            phone.press()
        # text mode is unaffected
        session = await engine.start_call("text")
        reply = await engine.user_said(session.call_id, "roll two d six")
        assert reply.text == "Rolling."
