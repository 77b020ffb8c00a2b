"""``@modelcontextprotocol/server-everything``'s ``trigger-elicitation-request`` answered by a caller's voice:
``ava-engine call --audio-in`` (the installed entry point) on a pipeline context (scripted brain, pocketsphinx,
espeak-ng) whose ``elicitation`` is ``caller``. The form's one required field is a free-text ``name``: the agent
asks for it by its title and description, pocketsphinx listens with its general model (open dictation: the yes/no
grammar it listened with before heard any name as one of its answers), the name is read back, a "yes" submits it
and server-everything echoes it. The second time the caller says "never mind" to the read-back: the question is
cancelled (a refusal is in every grammar the engine listens with; in open dictation it is only as good as the
general model, which heard espeak's "never mind" as "miller my youth")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.engine.mcp.helpers import EVERYTHING_BIN
from tests.engine.mcp.test_real_peers import needs_everything
from tests.engine.voice.helpers import caller_wav

EXE = Path(sys.executable).parent / "ava-engine"
TOOL = "mcp_ev_trigger_elicitation_request"
#: A name pocketsphinx's general model hears right in espeak's voice (it hears "john smith" as "honestly" and
#: "barack obama" as "barack obama it": open dictation on the offline recogniser is weak on names, see the README).
NAME = "abraham lincoln"


def run_call(tmp_path: Path, plan: list[tuple[str, float]]) -> list[dict[str, Any]]:
    script = {
        "greeting": "Form line.",
        "intents": [
            {
                "name": "form",
                "patterns": [r"\bform\b"],
                "examples": ["the form"],
                "reply": "Done.",
                "tools": [{"name": TOOL}],
            },
            {
                "name": "bye",
                "patterns": [r"\bgoodbye\b"],
                "examples": ["goodbye"],
                "tools": [{"name": "hangup_call", "args": {"farewell_message": "Bye now."}}],
            },
        ],
        "fallback": "Say the form.",
    }
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script))
    config = {
        "engine": {"http": {"enabled": False}, "tool_timeout_ms": 5000},
        "providers": {
            "brain": {"type": "scripted", "script": "script.yaml"},
            "voice": {"type": "pipeline", "brain": "brain", "voice": "en-us", "options": {"rate": 190}},
        },
        "mcp": {"servers": {"ev": {"command": [str(EVERYTHING_BIN), "stdio"], "connect_timeout_ms": 60_000}}},
        "contexts": {
            "forms": {
                "provider": "voice",
                "tools": ["mcp_ev_*", "hangup_call"],
                "elicitation": {"ask": "caller", "timeout_ms": 120_000},
            }
        },
    }
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    caller_wav(tmp_path / "in.wav", 1.5, [(text, "en-us", 140, gap) for text, gap in plan])
    cmd = [str(EXE), "--config", str(cfg), "call", "--context", "forms", "--json"]
    cmd += ["--audio-in", str(tmp_path / "in.wav"), "--audio-out", str(tmp_path / "out.wav")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@needs_everything
def test_the_caller_says_a_name_and_everything_gets_it_then_cancels_by_voice(tmp_path: Path) -> None:
    # the gaps leave room for the agent's question and read-back, which play while the caller is silent
    plan = [
        ("the form please", 10.0),
        (NAME, 6.0),
        ("yes", 8.0),
        ("the form please", 10.0),
        (NAME, 6.0),
        ("never mind", 8.0),
        ("goodbye", 3.0),
    ]
    events = run_call(tmp_path, plan)
    waits = [(e["prompt"], e["expect"]) for e in events if e["type"] == "elicitation.waiting"]
    asked = "Please provide inputs for the following fields: String: Your full, legal name?"
    # open dictation may hear a word more around the name ("the abraham lincoln" on a loaded machine): the name
    # must be in what was heard, read back and submitted
    assert [w[0] for w in waits[::2]] == [asked, asked] and waits[0][1] == waits[2][1] == []
    for prompt, expect in waits[1::2]:
        assert prompt.startswith("I heard ") and NAME in prompt and prompt.endswith(". Is that right?")
        assert "yes please" in expect  # the read-back listens for yes and no
    done = [(e["action"], e["by"], e["content"]) for e in events if e["type"] == "elicitation.resolved"]
    assert [(a, by) for a, by, _ in done] == [("accept", "caller"), ("cancel", "caller")]
    assert NAME in done[0][2]["name"] and done[1][2] == {}
    results = [str(e["data"]) + e["message"] for e in events if e["type"] == "tool.completed"]
    assert f"- Name: {NAME}" in results[0] and "User cancelled the elicitation dialog" in results[1]
