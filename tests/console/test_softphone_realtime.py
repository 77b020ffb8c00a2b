"""Pilot test: the console's softphone runs a voice call on a realtime provider (OpenAI Realtime, against the
loopback fake), by keyboard alone — the greeting is played, the caller's audio reaches the provider, its VAD turn
and answer show in the transcript, a tool runs, push-to-talk says it does not apply, and the call hangs up."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.widgets import Static

from console.app import AvaConsole
from tests.console.test_voice import Backends

FAKES = Path(__file__).resolve().parents[1] / "fixtures" / "fake_providers"
if str(FAKES) not in sys.path:
    sys.path.insert(0, str(FAKES))

from realtime_openai_fake import Calls, OpenAIRealtimeFake, Say  # noqa: E402

KEY = "sk-rt-console-SECRET-8080"

CONFIG = """
engine:
  http: {{enabled: false}}
providers:
  rt:
    type: openai_realtime
    model: gpt-realtime
    voice: marin
    base_url: {url}
    api_key: ${{RT_CONSOLE_KEY}}
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
    greeting: "Dice desk, hello."
    tools: [hangup_call, "mcp_dice_*"]
"""


def _slot(app: AvaConsole) -> str:
    return str(app.screen.query_one("#voice-slot", Static).render())


def _caller(ms: int, loud: bool) -> np.ndarray:
    n = 16 * ms
    if not loud:
        return np.zeros(n, dtype=np.int16)
    return (6000 * np.sin(2 * np.pi * 300 * np.arange(n) / 16000)).astype(np.int16)


async def test_voice_call_on_a_realtime_provider(tmp_path: Path, wait: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RT_CONSOLE_KEY", KEY)
    fake = OpenAIRealtimeFake(
        [
            Calls([("mcp_dice_roll", {"expression": "2d6"}, "call_roll_1")]),
            Say("You rolled eight.", audio_ms=500),
            Calls([("hangup_call", {"farewell_message": "Bye."}, "call_bye_2")]),
            Say("Bye.", audio_ms=300),
        ]
    )
    fake.caller_texts.extend(["roll two dice", "goodbye"])
    async with fake:
        cfg = tmp_path / "config.yaml"
        cfg.write_text(CONFIG.format(url=fake.url), encoding="utf-8")
        backends = Backends()
        app = AvaConsole(cfg, audio_backend_factory=backends)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait(pilot, lambda: app.engine_running, within=30)
            await pilot.press("v")
            await wait(pilot, lambda: app.phone is not None and app.phone.call_id is not None, within=30)
            assert app.phone is not None
            call_id = app.phone.call_id
            assert call_id is not None
            mic = backends.made[0]
            await wait(pilot, lambda: bool(mic.played) and app.voice.state == "listening", within=15)
            said = lambda: [(r, t) for _, r, t in app.state.transcript(call_id)]  # noqa: E731
            await wait(pilot, lambda: ("assistant", "Dice desk, hello.") in said())
            assert "listening" in _slot(app)
            # push-to-talk does not apply (the provider hears the caller itself): greyed out, space does nothing
            assert app.screen.check_action("push_to_talk", ()) is None
            await pilot.press("space")
            assert not app.voice.talking and "TALK" not in _slot(app) and "ptt" not in _slot(app)
            # the caller speaks: the fake's server VAD ends the turn after 500 ms of silence
            mic.feed(np.concatenate([_caller(600, True), _caller(700, False)]))
            await wait(pilot, lambda: ("assistant", "You rolled eight.") in said(), within=15)
            assert ("user", "roll two dice") in said()
            ran = lambda: [(i.exposed_name, i.status) for i in app.state.invocations]  # noqa: E731
            await wait(pilot, lambda: ("mcp_dice_roll", "success") in ran())
            transcript = app.screen.query_one("#transcript")
            await wait(pilot, lambda: any("You rolled eight." in str(line.text) for line in transcript.lines))  # type: ignore[attr-defined]
            app.save_screenshot(str(tmp_path / "realtime.svg"))
            # goodbye: hangup_call runs, the farewell plays, then the call ends and the softphone goes idle
            mic.feed(np.concatenate([_caller(500, True), _caller(700, False)]))
            await wait(pilot, lambda: call_id not in app.state.calls, within=15)
            phone = app.phone
            await wait(pilot, lambda: not phone.active and app.voice.state in ("ended", "idle"))
            assert ("assistant", "Bye.") in said()
            assert "voice: off" in _slot(app)
    assert fake.errors == []
    assert KEY not in (tmp_path / "realtime.svg").read_text(encoding="utf-8")
