"""Live steering on a voice call through the offline pipeline (VAD → STT → scripted brain → espeak TTS → WAV):
the operator's say-now line is spoken by the call's TTS while the turn is still thinking, kept as the agent's
words, and the turn's answer and its latency stay the turn's own."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import ContextConfig, ProviderConfig
from engine.events import SteeringInjected
from engine.sessions.history import Message
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult
from engine.voice.pipeline import VoiceCall
from engine.voice.stt import Recognizer
from engine.voice.wav_backend import WavBackend, read_wav
from tests.engine.voice.helpers import DEMO_CONFIG, RATE, caller_wav, demo_settings, has_speech

SCRIPT = """
greeting: "Vault line."
intents:
  - name: vault
    patterns: ['\\bvault\\b']
    examples: ["check the vault"]
    tools: [{name: slow_lookup}]
    reply: "{result}"
fallback: "Say check the vault."
"""
ANSWER = "Three gems are in the vault."
LINE = "The dragon stirs in its sleep."


def _engine(tmp_path: Path, started: asyncio.Event) -> Engine:
    settings = demo_settings(tmp_path)
    script = tmp_path / "vault.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    settings.mcp.enabled = False
    settings.providers["vault_script"] = ProviderConfig(type="scripted", script=str(script))
    settings.providers["vault_voice"] = ProviderConfig(
        type="pipeline", brain="vault_script", voice="en-us", options={"rate": 190}
    )
    settings.contexts["vault"] = ContextConfig(provider="vault_voice", tools=["slow_lookup"])

    async def lookup(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        started.set()
        await asyncio.sleep(1.0)  # under the tier's budget
        return ToolResult.success(ANSWER)

    definition = ToolDefinition(
        name="slow_lookup", description="Look in the vault (slow).", slow_response_threshold_ms=9000
    )
    tool = FunctionTool(definition, lookup)
    return Engine(settings, config_path=DEMO_CONFIG, extra_tools=[tool])


@pytest.mark.timeout(120)
async def test_say_now_is_spoken_by_tts_while_the_turn_thinks(tmp_path: Path) -> None:
    caller_wav(tmp_path / "in.wav", 1.5, [("check the vault", "en-us", 175, 8.0)])
    started = asyncio.Event()
    engine = _engine(tmp_path, started)
    async with engine:
        sub = engine.bus.subscribe(maxsize=10_000, types={SteeringInjected.type})
        backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", sample_rate=RATE, timeline=True)
        call = VoiceCall(engine.voice_parts, backend, "vault", recognizer=Recognizer())

        async def steer() -> str:
            await asyncio.wait_for(started.wait(), 60)  # the tool runs: the turn is thinking
            assert call.call_id is not None
            return await engine.say_now(call.call_id, LINE)

        steering = asyncio.create_task(steer())
        await call.run()
        via = await steering
        events = sub.drain()
        sub.close()
    assert via == "tts"
    assert [(p.kind, p.text) for p in call.playbacks] == [
        ("greeting", "Vault line."),
        ("steer", LINE),
        ("reply", ANSWER),
    ]
    _, line, answer = call.playbacks
    assert line.completed and answer.completed
    assert line.start_sample is not None and line.end_sample is not None and answer.start_sample is not None
    assert answer.start_sample >= line.end_sample  # one mouth: the answer waits for the line
    out = read_wav(tmp_path / "out.wav")
    assert has_speech(out, line.start_sample / RATE, line.start_sample / RATE + 1.0)
    (turn,) = [t for t in call.turns if t.text]
    assert turn.first_audio == answer.first_audio  # the turn's latency is its answer's, not the operator's line
    assert call.session is not None
    said = [i.text for i in call.session.history.items() if isinstance(i, Message) and i.role == "assistant"]
    assert said == ["Vault line.", LINE, ANSWER]
    (ev,) = events
    assert isinstance(ev, SteeringInjected) and (ev.kind, ev.via, ev.hidden) == ("say", "tts", False)
