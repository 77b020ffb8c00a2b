"""``ava-engine call --audio-in in.wav --audio-out out.wav --json`` on an OpenAI Realtime provider, as a user runs
it (the installed entry point in a child process) against the loopback fake: espeak caller audio drives the fake's
server VAD, a real MCP tool runs, hangup_call ends the call after the farewell, and out.wav lines up with in.wav.
The WAV is played to a realtime provider at real-time pace, so this test takes as long as in.wav (about 6 s)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from engine.voice.wav_backend import read_wav
from tests.engine.voice.helpers import ROOT, caller_wav

FAKES = ROOT / "tests" / "fixtures" / "fake_providers"
if str(FAKES) not in sys.path:
    sys.path.insert(0, str(FAKES))

from realtime_openai_fake import Calls, OpenAIRealtimeFake, Say  # noqa: E402

ENTRY = ROOT / ".venv" / "bin" / "ava-engine"
KEY = "sk-rt-test-SECRET-5150"

CONFIG = """
engine:
  http: {{enabled: false}}
providers:
  rt:
    type: openai_realtime
    model: gpt-realtime
    voice: marin
    base_url: {url}
    api_key: ${{RT_TEST_KEY}}
mcp:
  enabled: true
  servers:
    dice:
      transport: inprocess
      target: engine.servers.dice.server:create
      tools:
        - name: roll               # declared 100 ms at most; a loaded test machine needs more on the first call
          max_duration_ms: 1500
contexts:
  desk:
    provider: rt
    prompt: "You help {{caller_name}}."
    greeting: "Hello, dice desk."
    tools: [hangup_call, "mcp_dice_*"]
"""


async def _run_cli(cfg: Path, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        str(ENTRY),
        "--config",
        str(cfg),
        *args,
        cwd=ROOT,
        env={**os.environ, "RT_TEST_KEY": KEY},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def _loud(samples: np.ndarray, rate: int, threshold: int = 1500) -> np.ndarray:
    return np.flatnonzero(np.abs(samples.astype(np.int32)) > threshold) / rate


async def test_audio_call_on_openai_realtime_end_to_end(tmp_path: Path) -> None:
    spoken = caller_wav(
        tmp_path / "in.wav", 1.0, [("roll two dice", "en-us", 175, 2.5), ("goodbye", "en-us", 175, 2.0)]
    )
    fake = OpenAIRealtimeFake(
        [
            Calls([("mcp_dice_roll", {"expression": "2d6"}, "call_dice_1")]),
            Say("You rolled seven.", audio_ms=800),
            Calls([("hangup_call", {"farewell_message": "Bye now."}, "call_bye_2")]),
            Say("Bye now.", audio_ms=600),
        ]
    )
    fake.caller_texts.extend(["roll two dice", "goodbye"])
    async with fake:
        cfg = tmp_path / "cfg.yaml"
        cfg.write_text(CONFIG.format(url=fake.url), encoding="utf-8")
        code, out, err = await _run_cli(
            cfg,
            "call",
            "--context",
            "desk",
            "--audio-in",
            str(tmp_path / "in.wav"),
            "--audio-out",
            str(tmp_path / "out.wav"),
            "--json",
        )
    assert code == 0, err
    assert KEY not in out + err
    assert fake.errors == []  # every client event valid for the openai SDK and the lifecycle rules
    events: list[dict[str, Any]] = [json.loads(line) for line in out.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "call.started" and kinds[-1] == "call.ended"
    assert events[-1]["reason"] == "hangup"
    said = [(e["role"], e["text"]) for e in events if e["type"] == "transcript.added"]
    assert said == [
        ("assistant", "Hello, dice desk."),
        ("user", "roll two dice"),
        ("assistant", "You rolled seven."),
        ("user", "goodbye"),
        ("assistant", "Bye now."),
    ]
    done = [(e["exposed_name"], e["status"]) for e in events if e["type"] == "tool.completed"]
    assert done == [("mcp_dice_roll", "success"), ("hangup_call", "success")]
    outputs = {o["call_id"] for o in fake.outputs}
    assert outputs == {"call_dice_1", "call_bye_2"}  # ids echoed exactly
    usage = [e for e in events if e["type"] == "call.usage"]
    assert len(usage) == 1 and usage[0]["provider"] == "rt"
    assert usage[0]["input_tokens"] > 0 and usage[0]["output_tokens"] > 0
    # out.wav on in.wav's timeline (the WAV is played to the provider in real time): the greeting first, silence
    # while the caller talks, each answer after its turn (the fake's VAD ends a turn after 500 ms of silence, plus
    # the round trips), the farewell last
    caller = read_wav(tmp_path / "in.wav")
    agent = read_wav(tmp_path / "out.wav")
    loud = _loud(agent.samples, agent.sample_rate)
    roll, bye = spoken
    assert loud.size and loud[0] < 0.5  # the greeting at the start (after its round trip)
    assert not ((loud > roll.start) & (loud < roll.end)).any()  # quiet while the caller speaks
    answer = loud[(loud > roll.end) & (loud < bye.start)]
    assert answer.size and roll.end + 0.4 <= answer[0] <= roll.end + 1.2
    assert answer[-1] - answer[0] >= 0.7  # "You rolled seven." is 800 ms
    farewell = loud[loud > bye.end]
    assert farewell.size and bye.end + 0.4 <= farewell[0] <= bye.end + 1.2
    assert agent.samples.size / agent.sample_rate <= caller.samples.size / caller.sample_rate + 0.1


async def test_barge_in_truncates_to_what_the_caller_heard(tmp_path: Path) -> None:
    """The caller talks over a 3 s answer about 1.2 s into it: the answer stops in out.wav right there, and the
    adapter truncates the provider's item to the audio that was really played (the fake sent all 3 s at once)."""
    story, stop = caller_wav(
        tmp_path / "in.wav", 1.0, [("tell me a story", "en-us", 175, 1.8), ("stop please", "en-us", 175, 1.5)]
    )
    fake = OpenAIRealtimeFake([Say("Once upon a time.", audio_ms=3000), Say("Okay, stopping.", audio_ms=500)])
    fake.caller_texts.extend(["tell me a story", "stop please"])
    async with fake:
        cfg = tmp_path / "cfg.yaml"
        cfg.write_text(CONFIG.format(url=fake.url), encoding="utf-8")
        code, out, err = await _run_cli(
            cfg,
            "call",
            "--context",
            "desk",
            "--audio-in",
            str(tmp_path / "in.wav"),
            "--audio-out",
            str(tmp_path / "out.wav"),
            "--json",
        )
    assert code == 0, err
    assert fake.errors == []
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1]["type"] == "call.ended" and events[-1]["reason"] == "caller finished"
    agent = read_wav(tmp_path / "out.wav")
    loud = _loud(agent.samples, agent.sample_rate)
    answer = loud[(loud > story.end) & (loud < stop.end)]
    assert answer.size
    # the 10 ms windows that hold the tone: on a loaded machine the file's writer may pad silence between two late
    # chunks to keep the timeline, which the answer's span would count as heard
    heard_ms = 10 * np.unique((answer * 100).astype(int)).size
    # the answer stops within the provider's VAD reaction (one 20 ms append, the round trip) of the caller starting
    assert stop.start - 0.05 <= answer[-1] <= stop.start + 0.3
    truncates = fake.of_type("conversation.item.truncate")
    assert len(truncates) == 1
    assert abs(truncates[0]["audio_end_ms"] - heard_ms) <= 60  # what reached out.wav, to a chunk or so
    said = [(e["role"], e["text"]) for e in events if e["type"] == "transcript.added"]
    assert said[-2:] == [("user", "stop please"), ("assistant", "Okay, stopping.")]
