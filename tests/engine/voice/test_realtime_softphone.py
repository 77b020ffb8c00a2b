"""The Softphone on a realtime provider: it picks RealtimeVoiceCall by itself (no recognizer is loaded), plays the
provider's audio, reports states and levels on the bus, mutes, refuses push-to-talk with a clear message, and
hangs up."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, ProviderConfig, Settings
from engine.events import CallEnded, Event, SoftphoneLevel, SoftphoneStateChanged
from engine.realtime.call import RealtimeVoiceCall
from engine.realtime.session import CallerSpeechStarted, CallerSpeechStopped, CallerText
from engine.voice.backend import AudioBackend
from engine.voice.device_backend import DeviceSpec
from engine.voice.softphone import Softphone
from tests.fixtures.audio_backends import FeedBackend
from tests.fixtures.realtime_scripted import provider_of, scripted_tools, use_scripted_realtime
from tests.waiting import wait_until


def _settings() -> Settings:
    return Settings(
        engine=EngineConfig(http=HttpConfig(enabled=False)),
        providers={"rt": ProviderConfig(type="openai_realtime", model="m")},
        contexts={"desk": ContextConfig(provider="rt", greeting="Desk here.", tools=["get_weather"])},
    )


async def _until(pred: Callable[[], bool]) -> None:
    """Poll a condition the code under test has no event for (bounded: 10 s)."""
    await wait_until(pred)


async def test_softphone_runs_a_realtime_voice_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_scripted_realtime(monkeypatch)
    made: list[FeedBackend] = []

    def factory(i: DeviceSpec, o: DeviceSpec, rate: int, frame_ms: int) -> AudioBackend:
        made.append(FeedBackend(rate, frame_ms))
        return made[-1]

    async with Engine(_settings(), extra_tools=scripted_tools()) as engine:
        sub = engine.bus.subscribe(maxsize=100_000)
        phone = Softphone(engine.voice_parts, spawn=engine.spawn, backend_factory=factory, level_interval_s=0.0)
        call_id = await phone.start("desk")
        assert isinstance(phone.call, RealtimeVoiceCall) and phone._recognizer is None
        assert "softphone:desk" in engine.tasks.names()
        live = provider_of(engine).sessions[-1]
        mic = made[0]
        await _until(lambda: phone.state == "listening" and bool(mic.played))  # the greeting was played
        assert not phone.push_to_talk
        with pytest.raises(RuntimeError, match="not available on a realtime provider"):
            phone.press()
        t = np.arange(8000) / 16000
        mic.feed((6000 * np.sin(2 * np.pi * 300 * t)).astype(np.int16))
        await _until(lambda: mic.mic.empty())
        assert phone.input_level_dbfs > -20
        live.emit(CallerSpeechStarted())
        await _until(lambda: phone.state == "hearing")
        live.emit(CallerSpeechStopped(), CallerText("what's the weather"))
        await _until(lambda: phone.state == "thinking")
        live.say("Sunny.")
        await _until(lambda: phone.state == "listening")
        phone.mute(True)
        before = len(live.audio_in)
        mic.feed((6000 * np.sin(2 * np.pi * 300 * t)).astype(np.int16))
        await _until(lambda: mic.mic.empty() and len(live.audio_in) > before + 10_000)
        muted = np.frombuffer(bytes(live.audio_in[before + 2000 :]), dtype="<i2")  # past the resampler's tail
        assert np.abs(muted).max() < 50
        await phone.end()
        assert phone.state == "idle" and live.closed
        events: list[Event] = sub.drain()
    states = [e.state for e in events if isinstance(e, SoftphoneStateChanged)]
    for expected in ("listening", "hearing", "thinking", "speaking", "idle"):
        assert expected in states
    assert any(e.muted for e in events if isinstance(e, SoftphoneStateChanged))
    assert any(isinstance(e, SoftphoneLevel) and e.call_id == call_id for e in events)
    assert [e.reason for e in events if isinstance(e, CallEnded)] == ["ended by operator"]
