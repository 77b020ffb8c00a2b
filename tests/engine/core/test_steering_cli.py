"""Steering a text call from the command line, through the installed ``ava-engine call``: ``--whisper`` and
``--say-now`` run in order with ``--say``; a bad steering text is a usage error (exit 2) naming the option."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
AVA_ENGINE = ROOT / ".venv" / "bin" / "ava-engine"
CONFIG = ROOT / "tests" / "console" / "data" / "console.yaml"


def ava_engine(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the installed command imports this tree's code
    return subprocess.run(
        [str(AVA_ENGINE), "--config", str(CONFIG), *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_whisper_and_say_now_in_order_with_the_callers_turns() -> None:
    p = ava_engine(
        "call",
        "--context",
        "demo",
        "--whisper",
        "You adore cheese.",
        "--say",
        "hello",
        "--say-now",
        "A raven lands on the sill.",
        "--say",
        "goodbye",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    flow = [
        (e["type"], e.get("role") or e.get("kind"), e.get("text"))
        for e in events
        if e["type"] in ("transcript.added", "steering.injected")
    ]
    assert flow[:6] == [
        ("transcript.added", "assistant", "Hello there, console test line."),
        ("steering.injected", "whisper", "You adore cheese."),
        ("transcript.added", "user", "hello"),
        ("transcript.added", "assistant", "Hello! I'm listening."),
        ("steering.injected", "say", "A raven lands on the sill."),
        ("transcript.added", "assistant", "A raven lands on the sill."),
    ]
    whisper = next(e for e in events if e["type"] == "steering.injected" and e["kind"] == "whisper")
    assert whisper["hidden"] is True and whisper["via"] == "system prompt of the next turn"


def test_human_output_marks_the_operators_steering() -> None:
    p = ava_engine("call", "--context", "demo", "--whisper", "Be brief.", "--say", "hello")
    assert p.returncode == 0, p.stderr
    line = next(line for line in p.stdout.splitlines() if "✎" in line)  # the console's log words it the same
    assert line.strip().startswith("✎ The operator whispered to the agent")
    assert line.endswith("(hidden from the caller): Be brief.")


def test_bad_steering_text_is_a_usage_error() -> None:
    p = ava_engine("call", "--context", "demo", "--whisper", "   ", "--say", "hello")
    assert p.returncode == 2
    assert "--whisper: the whisper is empty" in p.stderr
    p = ava_engine("call", "--context", "demo", "--say-now", "x" * 501)
    assert p.returncode == 2
    assert "--say-now: the say-now line is 501 characters long; at most 500" in p.stderr
    assert p.stdout == ""
