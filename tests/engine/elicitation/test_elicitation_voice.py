"""A caller answers a tool's questions by voice: ``ava-engine call --audio-in`` (the installed entry point) on a
pipeline context (scripted brain, pocketsphinx, espeak-ng) whose ``elicitation`` is ``caller``. The tool asks how
many guests (an integer) and, on the other tool, for a yes/no confirmation, on a 2025-era and a 2026-era server;
the caller's WAV answers "four", confirms "yes", and says "yes" to the cancellation. A second call answers
"no" to the read-back twice: the question is declined, the caller told so, and the call goes on; a file that ends
while a question waits declines it at once (silence is not an answer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.engine.elicitation.helpers import ERAS, SERVER
from tests.engine.voice.helpers import caller_wav

EXE = Path(sys.executable).parent / "ava-engine"
#: The tool's question: its message, then the field by its description and range.
GUESTS = "How many guests should I book the table for? Number of guests? A whole number from 1 to 12."

SCRIPT = {
    "greeting": "Table line.",
    "intents": [
        {
            "name": "book",
            "patterns": [r"\bbook\b"],
            "examples": ["book a table"],
            "tools": [{"name": "mcp_{era}_book_table"}],
            "reply": "{result}",
        },
        {
            "name": "cancel",
            "patterns": [r"\bcancel\b"],
            "examples": ["cancel my order"],
            "tools": [{"name": "mcp_{era}_cancel_order", "args": {"order": "A1"}}],
            "reply": "{result}",
        },
        {
            "name": "bye",
            "patterns": [r"\bgoodbye\b"],
            "examples": ["goodbye"],
            "tools": [{"name": "hangup_call", "args": {"farewell_message": "Bye now."}}],
        },
    ],
    "fallback": "Say book a table.",
}


def run_call(tmp_path: Path, era: str, plan: list[tuple[str, float]]) -> list[dict[str, Any]]:
    script = json.loads(json.dumps(SCRIPT).replace("{era}", era))
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script))
    server = {"command": [sys.executable, str(SERVER)], "mode": ERAS[era], "connect_timeout_ms": 60_000}
    config = {
        "engine": {"http": {"enabled": False}, "tool_timeout_ms": 3000},
        "providers": {
            "brain": {"type": "scripted", "script": "script.yaml"},
            "voice": {"type": "pipeline", "brain": "brain", "voice": "en-us", "options": {"rate": 190}},
        },
        "mcp": {"servers": {era: server}},
        "contexts": {
            "tables": {
                "provider": "voice",
                "tools": [f"mcp_{era}_*", "hangup_call"],
                "elicitation": {"ask": "caller", "timeout_ms": 120_000},
            }
        },
    }
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    caller_wav(tmp_path / "in.wav", 1.5, [(text, "en-us", 160, gap) for text, gap in plan])
    cmd = [str(EXE), "--config", str(cfg), "call", "--context", "tables", "--json"]
    cmd += ["--audio-in", str(tmp_path / "in.wav"), "--audio-out", str(tmp_path / "out.wav")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def said(events: list[dict[str, Any]], role: str) -> list[str]:
    return [e["text"] for e in events if e["type"] == "transcript.added" and e["role"] == role]


@pytest.mark.parametrize("era", list(ERAS))
def test_the_caller_answers_a_number_and_a_confirmation_by_voice(tmp_path: Path, era: str) -> None:
    # the gaps leave room for the agent's question and read-back, which play while the caller is silent
    plan = [
        ("book a table", 7.0),
        ("four", 5.0),
        ("yes", 7.0),
        ("cancel my order", 7.0),
        ("yes", 7.0),
        ("goodbye", 3.0),
    ]
    events = run_call(tmp_path, era, plan)
    agent = said(events, "assistant")
    assert GUESTS in agent
    assert "I heard 4. Is that right?" in agent
    assert "Do you really want to cancel order A1? Confirm: cancel the order? Please say yes or no." in agent
    done = [
        (e["exposed_name"], e["action"], e["by"], e["content"]) for e in events if e["type"] == "elicitation.resolved"
    ]
    assert done == [
        (f"mcp_{era}_book_table", "accept", "caller", {"guests": 4}),
        (f"mcp_{era}_cancel_order", "accept", "caller", {"confirm": True}),
    ]
    results = [(e["exposed_name"], e["status"], e["message"]) for e in events if e["type"] == "tool.completed"]
    assert results[:2] == [
        (f"mcp_{era}_book_table", "success", 'accept {"guests":4}'),
        (f"mcp_{era}_cancel_order", "success", 'accept {"confirm":true}'),
    ]
    waiting = [e["who"] for e in events if e["type"] == "elicitation.waiting"]
    assert waiting == ["caller"] * 3  # the number, its read-back, the confirmation
    assert said(events, "user")[:4] == ["book a table", "four", "yes", "cancel my order"]


def test_a_read_back_refused_twice_is_declined_and_the_call_goes_on(tmp_path: Path) -> None:
    plan = [("book a table", 7.0), ("four", 5.0), ("no", 10.0), ("four", 5.0), ("no", 7.0), ("goodbye", 3.0)]
    events = run_call(tmp_path, "old", plan)
    (done,) = [e for e in events if e["type"] == "elicitation.resolved"]
    assert (done["action"], done["by"]) == ("decline", "caller")
    assert done["reason"] == "the caller did not confirm the answers 2 times"
    agent = said(events, "assistant")
    assert f"Sorry, let's try again. {GUESTS}" in agent
    assert "I'm sorry, I couldn't get that, so I'll carry on without it." in agent
    (result,) = [e for e in events if e["type"] == "tool.completed"][:1]
    assert result["message"] == "decline"
    assert said(events, "assistant")[-1] == "Bye now."


def test_a_caller_who_falls_silent_is_not_waited_for(tmp_path: Path) -> None:
    events = run_call(tmp_path, "new", [("book a table", 7.0)])
    (done,) = [e for e in events if e["type"] == "elicitation.resolved"]
    assert (done["action"], done["by"], done["reason"]) == (
        "decline",
        "caller",
        "the caller's answer to 'Guests' was not understood 2 times",  # silence twice
    )
    assert [e["message"] for e in events if e["type"] == "tool.completed"] == ["decline"]
