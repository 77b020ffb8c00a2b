"""The offline pipeline's usage is CPU seconds: each turn's recognition (and the synthesis since the last turn),
measured on the worker threads that did it, on the call's meter as ``usage.updated`` and in Prometheus."""

from __future__ import annotations

from pathlib import Path

from engine.app import Engine
from engine.events import UsageUpdated
from engine.voice.pipeline import VoiceCall
from engine.voice.stt import Recognizer
from engine.voice.wav_backend import WavBackend
from tests.engine.voice.helpers import DEMO_CONFIG, RATE, caller_wav, demo_settings

GREETING_S = 10.0  # the demo greeting is about 8.5 s at 170 wpm


async def test_a_pipeline_turn_reports_its_cpu_seconds(tmp_path: Path) -> None:
    caller_wav(tmp_path / "in.wav", GREETING_S, [("hello", "en-us", 175, 4.0), ("goodbye", "en-us", 175, 1.0)])
    async with Engine(demo_settings(tmp_path), config_path=DEMO_CONFIG) as engine:
        sub = engine.bus.subscribe(maxsize=10_000, types={UsageUpdated.type})
        backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", sample_rate=RATE, timeline=True)
        call = VoiceCall(engine.voice_parts, backend, "demo", recognizer=Recognizer())
        call_id = await call.run()
        events = [e for e in sub.drain() if isinstance(e, UsageUpdated) and e.call_id == call_id]
        metrics = engine.metrics.render().decode()
    assert call.turns[0].text == "hello"
    first = next(e for e in events if e.turn == 1)
    assert first.usage.cpu_s > 0.01  # decoding a second of speech, and synthesising the greeting
    assert first.usage.input_tokens == 0 and not first.priced  # a scripted brain on local STT/TTS: no price
    assert "ai_agent_provider_cpu_seconds_total" in metrics
