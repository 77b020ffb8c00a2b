"""A caller answers a tool's question by voice on a realtime provider: ``ava-engine call --audio-in --json`` (the
installed entry point, a child process) against the loopback OpenAI Realtime and Deepgram Voice Agent fakes, with
the elicitation fixture MCP server in both protocol eras. The provider asks for ``book_table``; the tool asks "How
many guests?"; the provider says the question (OpenAI ``response.create`` word for word while the call's output is
outstanding, Deepgram ``InjectAgentMessage``); the caller's WAV answers "four", then "yes" to the read-back, heard
by the engine; the tool gets 4. Meanwhile the provider hears only silence (the fakes measure the energy of the
caller audio they receive while the function call waits)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from engine.voice.g711 import ulaw_decode
from tests.engine.elicitation.helpers import ERAS, SERVER
from tests.engine.voice.helpers import ROOT, caller_wav

FAKES = ROOT / "tests" / "fixtures" / "fake_providers"
if str(FAKES) not in sys.path:
    sys.path.insert(0, str(FAKES))

from realtime_deepgram_fake import ScriptedDeepgram  # noqa: E402
from realtime_openai_fake import Calls, OpenAIRealtimeFake, Say  # noqa: E402

EXE = Path(sys.executable).parent / "ava-engine"
KEY = "sk-rt-test-SECRET-4242"
#: The caller: "book a table", then (after the question) "four", then (after the read-back) "yes".
PLAN = [("book a table", 1.2), ("four", 1.6), ("yes", 1.0)]
#: The tool's question: its message, then the field by its description and range.
ASKED = "How many guests should I book the table for? Number of guests? A whole number from 1 to 12."


def _rms(pcm: np.ndarray) -> float:
    return float(np.sqrt(np.mean(pcm.astype(np.float64) ** 2))) if pcm.size else 0.0


class AskedOpenAI(OpenAIRealtimeFake):
    """The OpenAI fake, also measuring the caller audio that arrives while a function call awaits its output."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(script)
        self.while_waiting: list[float] = []

    async def _vad(self, data: bytes) -> None:
        if any(state == "awaiting" for state in self.calls.values()):
            pcm = np.frombuffer(data[: len(data) - len(data) % 2], "<i2")
            self.while_waiting.append(_rms(pcm if self._in_format().get("type") == "audio/pcm" else ulaw_decode(data)))
        await super()._vad(data)


class AskedDeepgram(ScriptedDeepgram):
    """The scripted Deepgram agent, also measuring the caller audio that arrives while a function call waits."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.while_waiting: list[float] = []

    async def on_message(self, msg: Any) -> None:
        if isinstance(msg, bytes) and self.outstanding:
            enc = self.settings[-1]["audio"]["input"]["encoding"]
            pcm = ulaw_decode(msg) if enc == "mulaw" else np.frombuffer(msg[: len(msg) - len(msg) % 2], "<i2")
            self.while_waiting.append(_rms(pcm))
        await super().on_message(msg)


def _config(tmp_path: Path, era: str, provider: dict[str, Any]) -> Path:
    server = {"command": [sys.executable, str(SERVER)], "mode": ERAS[era], "connect_timeout_ms": 60_000}
    config = {
        "engine": {"http": {"enabled": False}, "tool_timeout_ms": 3000},
        "providers": {"rt": provider},
        "mcp": {"servers": {era: server}},
        "contexts": {
            "tables": {
                "provider": "rt",
                "prompt": "You book tables.",
                "greeting": "Table line.",
                "tools": [f"mcp_{era}_*"],
                "elicitation": {"ask": "caller", "timeout_ms": 60_000},
            }
        },
    }
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    return cfg


async def _call(tmp_path: Path, cfg: Path) -> list[dict[str, Any]]:
    cmd = [str(EXE), "--config", str(cfg), "call", "--context", "tables", "--json"]
    cmd += ["--audio-in", str(tmp_path / "in.wav"), "--audio-out", str(tmp_path / "out.wav")]
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        cwd=ROOT,
        env={**os.environ, "RT_TEST_KEY": KEY},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    assert KEY not in out.decode() + err.decode()
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


def _said(events: list[dict[str, Any]], role: str) -> list[str]:
    return [e["text"] for e in events if e["type"] == "transcript.added" and e["role"] == role]


def _check_answered(events: list[dict[str, Any]], era: str) -> None:
    done = [
        (e["exposed_name"], e["action"], e["by"], e["content"]) for e in events if e["type"] == "elicitation.resolved"
    ]
    assert done == [(f"mcp_{era}_book_table", "accept", "caller", {"guests": 4})]
    results = [(e["exposed_name"], e["status"], e["message"]) for e in events if e["type"] == "tool.completed"]
    assert results == [(f"mcp_{era}_book_table", "success", 'accept {"guests":4}')]
    assert [e["who"] for e in events if e["type"] == "elicitation.waiting"] == ["caller", "caller"]
    agent = _said(events, "assistant")
    # each of the desk's lines once: the provider's own transcript of it is not recorded a second time
    assert agent.count(ASKED) == 1
    assert agent.count("I heard 4. Is that right?") == 1
    assert agent[-1] == "Booked for four."
    assert _said(events, "user") == ["book a table", "four", "yes"]


# one era per provider: the two eras ask the same question to the desk (pipeline tests run each era on each path);
# a realtime call costs ~15 s through the CLI
@pytest.mark.parametrize("era", ["old"])
async def test_openai_realtime_caller_answers_a_tools_question(tmp_path: Path, era: str) -> None:
    caller_wav(tmp_path / "in.wav", 1.0, [(text, "en-us", 160, gap) for text, gap in PLAN])
    fake = AskedOpenAI([Calls([(f"mcp_{era}_book_table", {}, "call_book_1")]), Say("Booked for four.")])
    fake.caller_texts.append("book a table")
    async with fake:
        provider = {
            "type": "openai_realtime",
            "model": "gpt-realtime",
            "voice": "marin",
            "base_url": fake.url,
            "api_key": "${RT_TEST_KEY}",
        }
        events = await _call(tmp_path, _config(tmp_path, era, provider))
    assert fake.errors == []  # every client event SDK-valid; the question's response.create is allowed meanwhile
    _check_answered(events, era)
    says = [m["response"]["instructions"] for m in fake.of_type("response.create") if m.get("response")]
    assert any(ASKED in s for s in says)
    assert all(m["response"].get("tool_choice") == "none" for m in fake.of_type("response.create") if m.get("response"))
    assert [o["call_id"] for o in fake.outputs] == ["call_book_1"]
    # the tool ran past its slow-response threshold while the question was open: "one moment" would have talked
    # over the question, so it was held (never handed to the provider)
    assert any(e["type"] == "announcement.requested" for e in events)
    assert not any(e["type"] == "announcement.played" for e in events)
    assert not any("One moment" in s for s in says)
    # the provider heard the caller's "four" and "yes" as silence: no speech while the call waited
    assert len(fake.while_waiting) > 50 and max(fake.while_waiting) < 50


@pytest.mark.parametrize("era", ["new"])
async def test_deepgram_agent_caller_answers_a_tools_question(tmp_path: Path, era: str) -> None:
    caller_wav(tmp_path / "in.wav", 1.0, [(text, "en-us", 160, gap) for text, gap in PLAN])
    # the agent hears "book a table" once 2.3 s of caller audio arrived (the WAV's phrase ends before that)
    fake = AskedDeepgram(300, [(2.3, "book a table", (f"mcp_{era}_book_table", "{}"), "Booked for four.")], 400)
    async with fake:
        provider = {
            "type": "deepgram_agent",
            "model": "gpt-4o-mini",
            "voice": "aura-2-thalia-en",
            "base_url": fake.url,
            "api_key": "${RT_TEST_KEY}",
        }
        events = await _call(tmp_path, _config(tmp_path, era, provider))
    assert fake.errors == []
    _check_answered(events, era)
    injected = [m["message"] for m in fake.of_type("InjectAgentMessage")]
    assert injected[:2] == [ASKED, "I heard 4. Is that right?"]
    assert list(fake.answered) == ["fc-1"]
    assert len(fake.while_waiting) > 50 and max(fake.while_waiting) < 50
