"""A whole voice call on ElevenLabs Agents: the engine's realtime voice driver, a WAV caller, the scripted platform.

The caller's 8 kHz audio reaches the agent as μ-law 8 kHz (the agent's ulaw_8000), the agent's answers come back
the same way; every client message is validated by the fake against the elevenlabs SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from realtime_elevenlabs_fake import AGENT_ID, API_KEY, ElevenLabsRestFake
from realtime_elevenlabs_world import ScriptedElevenLabs, world

from engine.events import CallEnded, Event, ToolCompleted
from engine.realtime.call import RealtimeVoiceCall
from engine.sessions.history import Message
from engine.voice.audio import AudioFrame
from engine.voice.wav_backend import WavBackend, read_wav, write_wav

RATE = 8000
STEPS = [
    (0.6, "Weather in Paris?", ("get_weather", {"city": "Paris"}), "It is 18 degrees in Paris."),
    (1.4, "Thanks, bye.", ("hangup_call", {"farewell_message": "Goodbye!"}), "Goodbye!"),
]


def caller_wav(path: Path, seconds: float = 3.0, rate: int = RATE) -> None:
    t = np.arange(round(rate * seconds)) / rate
    write_wav(path, AudioFrame((3000 * np.sin(2 * np.pi * 220 * t)).astype(np.int16), rate))


async def test_voice_call_with_a_tool_and_hangup(tmp_path: Path) -> None:
    caller_wav(tmp_path / "in.wav")
    fake = ScriptedElevenLabs(list(STEPS))
    async with world(fake) as w:
        sub = w.engine.bus.subscribe(maxsize=10_000)
        backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", sample_rate=RATE, timeline=True)
        call = RealtimeVoiceCall(w.engine, backend, "desk", settle_s=0.2)
        async with asyncio.timeout(30):
            await call.run()
        sub.close()
        events: list[Event] = [e async for e in sub]
    assert fake.errors == [] and w.rest.errors == []
    assert call.end_reason == "hangup"
    tools = [e for e in events if isinstance(e, ToolCompleted)]
    assert [(t.exposed_name, t.status) for t in tools] == [("get_weather", "success"), ("hangup_call", "success")]
    assert [r["tool_call_id"] for r in fake.results] == ["toolu_0001", "toolu_0002"]
    assert next(e for e in events if isinstance(e, CallEnded)).reason == "hangup"
    assert call.session is not None
    said = [(m.role, m.text) for m in call.session.history.items() if isinstance(m, Message)]
    assert ("assistant", "Hello, test desk.") in said
    assert ("user", "Weather in Paris?") in said and ("assistant", "It is 18 degrees in Paris.") in said
    assert ("assistant", "Goodbye!") in said
    assert sum(len(c) for c in fake.audio_chunks) >= 0.6 * 8000  # μ-law: one byte a sample
    assert call.usage is not None and call.usage.total.output_audio_s > 1.2  # greeting 0.3 + two answers 0.5 each
    out = read_wav(tmp_path / "out.wav")
    assert out.sample_rate == RATE
    loud = np.flatnonzero(np.abs(out.samples.astype(np.int32)) > 2000) / out.sample_rate
    assert loud.size and loud[0] < 0.1  # the greeting opens the call
    assert (loud > 0.6).any()  # the answer comes after the caller's question


def test_cli_voice_call_against_the_fake(tmp_path: Path) -> None:
    """``ava-engine call --audio-in`` (the installed entry point, a subprocess) on an elevenlabs_agent context."""
    caller_wav(tmp_path / "in.wav")

    async def scenario() -> tuple[ScriptedElevenLabs, ElevenLabsRestFake, subprocess.CompletedProcess[str]]:
        fake = ScriptedElevenLabs(list(STEPS))
        async with fake, ElevenLabsRestFake(fake) as rest:
            cfg = tmp_path / "cfg.yaml"
            cfg.write_text(
                "engine: {http: {enabled: false}}\n"
                "providers:\n"
                "  el:\n"
                "    type: elevenlabs_agent\n"
                f"    agent_id: {AGENT_ID}\n"
                f"    base_url: {rest.url}\n"
                "    api_key: ${EL_TEST_KEY}\n"
                "contexts:\n"
                "  desk: {provider: el, prompt: You are a test agent., greeting: Hello there., tools: [hangup_call]}\n"
            )
            exe = Path(sys.executable).parent / "ava-engine"
            cmd = [str(exe), "--config", str(cfg), "call", "--context", "desk", "--json"]
            cmd += ["--audio-in", str(tmp_path / "in.wav"), "--audio-out", str(tmp_path / "out.wav")]
            proc = await asyncio.create_subprocess_exec(
                *cmd,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "EL_TEST_KEY": API_KEY},
            )
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            done = subprocess.CompletedProcess(cmd, proc.returncode or 0, out.decode(), err.decode())
        return fake, rest, done

    fake, rest, done = asyncio.run(scenario())
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    kinds = [e["type"] for e in events]
    assert "call.started" in kinds and "call.ended" in kinds
    # get_weather is not in this context: the agent's call is refused with an error result, and the call goes on.
    first = next(r for r in fake.results if r["tool_call_id"] == "toolu_0001")
    assert first["is_error"] is True and "rejected" in first["result"]
    assert next(e for e in events if e["type"] == "call.ended")["reason"] == "hangup"
    assert fake.errors == [] and rest.errors == [] and API_KEY not in done.stdout + done.stderr
    assert rest.linked_names() == ["hangup_call"]
    out_wav = read_wav(tmp_path / "out.wav")
    assert (np.abs(out_wav.samples.astype(np.int32)) > 2000).any()  # the agent's μ-law answers were played
