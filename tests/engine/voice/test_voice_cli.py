"""``ava-engine call --audio-in/--audio-out --json`` as a user runs it (a child process, real MCP servers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from engine.voice.wav_backend import read_wav
from tests.engine.voice.helpers import ROOT, caller_wav, has_speech, silent


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", "--config", str(ROOT / "config" / "default.yaml"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )


def test_audio_call_prints_events_and_writes_the_answer_on_the_input_timeline(tmp_path: Path) -> None:
    spoken = caller_wav(
        tmp_path / "in.wav", 10.0, [("roll two d six", "en-us", 175, 6.0), ("goodbye", "en-us", 175, 4)]
    )
    p = _cli(
        "call",
        "--context",
        "demo",
        "--audio-in",
        str(tmp_path / "in.wav"),
        "--audio-out",
        str(tmp_path / "out.wav"),
        "--json",
    )
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    assert events[0]["type"] == "call.started" and events[-1]["type"] == "call.ended"
    assert events[-1]["reason"] == "hangup"
    users = [e["text"] for e in events if e["type"] == "transcript.added" and e["role"] == "user"]
    assert users == ["roll two d six", "goodbye"]
    tools = [e["exposed_name"] for e in events if e["type"] == "tool.completed"]
    assert tools == ["mcp_dice_roll", "hangup_call"]
    out = read_wav(tmp_path / "out.wav")
    assert has_speech(out, 0.5, 2.0)  # the greeting
    roll = spoken[0]
    assert silent(out, roll.start, roll.end + 0.5)  # quiet while the caller spoke and the endpointer waited
    assert has_speech(out, roll.end + 0.9, roll.end + 1.9)  # the dice answer right after


def test_audio_options_usage_errors(tmp_path: Path) -> None:
    p = _cli("call", "--context", "demo", "--audio-in", str(tmp_path / "missing.wav"), "--audio-out", "o.wav")
    assert p.returncode == 2 and "no such file" in p.stderr
    p = _cli("call", "--context", "demo", "--audio-out", str(tmp_path / "o.wav"))
    assert p.returncode == 2 and "--audio-in and --audio-out go together" in p.stderr
