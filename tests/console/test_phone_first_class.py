"""Phone calls as first-class citizens in the console (issue 34, items 6 and 12): the operator's place on a phone
call (listen, whisper, take over) shows as a badge in the Calls table's State and in the header's count; a take-over
keeps the call one live row and the hand-back continues it under the same id (never an ended row plus a new one);
the phone keys are in the footer and the palette while a phone call is selected, and only then. The voice panel
shows the agent's level beside the caller's. On the ARI emulator over loopback; the operator's audio is a
``FeedBackend`` handed to the engine (the keys' own path to the sound devices is tested in test_operator_keys)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.widgets import DataTable, Static

from console.app import AvaConsole
from console.commands import ConsoleCommands
from console.screens.calls import CallsScreen
from tests.fixtures.audio_backends import FeedBackend

ARI = Path(__file__).resolve().parents[1] / "fixtures" / "ari"
if str(ARI) not in sys.path:
    sys.path.insert(0, str(ARI))

from emulator import AriEmulator  # noqa: E402

pytestmark = pytest.mark.timeout(120)

PHONE_KEYS = {"op_listen", "op_whisper_agent", "op_whisper_caller", "op_takeover", "op_off", "op_transfer"}


def with_asterisk(config_path: Path, url: str) -> None:
    text = config_path.read_text(encoding="utf-8")
    config_path.write_text(
        text + f"asterisk:\n  enabled: true\n  ari_url: {url}\n  username: ava\n"
        "  password: ${PFC_ARI_PASSWORD}\n  default_context: demo\n  rtp_port_start: 46200\n"
        "  rtp_port_end: 46299\n",
        encoding="utf-8",
    )


def footer_ids(app: AvaConsole) -> set[str]:
    """The keyed bindings the footer shows now (shown and not hidden by the screen's ``check_action``)."""
    return {b.id for _n, b, enabled, _t in app.screen.active_bindings.values() if b.id and b.show and enabled}


async def palette_ids(app: AvaConsole) -> set[str]:
    provider = ConsoleCommands(app.screen)
    return {help_text.rsplit(" · ", 1)[-1] for _label, _run, help_text in provider._commands()}


def state_cell(app: AvaConsole, call_id: str) -> str:
    table = app.screen.query_one("#calls", DataTable)
    return str(table.get_cell(call_id, "state"))


def subtitle(app: AvaConsole) -> str:
    return str(app.screen.sub_title or app.sub_title)


async def test_take_over_keeps_one_live_call_and_hand_back_continues_it(
    config_path: Path, wait: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with AriEmulator() as emu:
        monkeypatch.setenv("PFC_ARI_PASSWORD", emu.password)
        with_asterisk(config_path, emu.url)
        app = AvaConsole(config_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait(pilot, lambda: app.engine_running, within=30)
            assert isinstance(app.screen, CallsScreen)
            assert PHONE_KEYS & footer_ids(app) == set()  # no call selected: no phone keys
            assert PHONE_KEYS & await palette_ids(app) == set()
            await emu.wait_subscribers(within_s=20)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await wait(pilot, lambda: app.selected_call in app.state.calls, within=30)
            call_id = app.selected_call
            assert call_id is not None and app.engine is not None
            await wait(pilot, lambda: PHONE_KEYS <= footer_ids(app), within=20)  # a phone call is selected
            assert PHONE_KEYS <= await palette_ids(app)

            operator = FeedBackend(sample_rate=16000)
            await app.engine.monitor_call(caller.id, "listen", lambda: operator)
            await wait(pilot, lambda: "op listening" in state_cell(app, call_id))
            await wait(pilot, lambda: "1 call (1 with operator)" in subtitle(app))

            await app.engine.monitor_call(caller.id, "takeover", lambda: FeedBackend(sample_rate=16000))
            await wait(pilot, lambda: "op has the call" in state_cell(app, call_id))
            info = app.engine.call_info(call_id)
            assert info is not None and info.state == "operator"  # live, under its id, while the operator has it
            assert list(app.state.calls) == [call_id] and call_id not in app.state.ended
            assert "1 call (1 with operator)" in subtitle(app)
            assert PHONE_KEYS <= footer_ids(app)  # b hands back from the same selected row

            await app.engine.monitor_call(caller.id, "off")
            await wait(pilot, lambda: any(r == "handback" for _, r, _ in app.state.transcript(call_id)), within=30)
            assert list(app.state.calls) == [call_id] and app.state.ended == {}  # one call, never ended
            table = app.screen.query_one("#calls", DataTable)
            assert list(table.rows) == [call_id]
            await wait(pilot, lambda: "op " not in state_cell(app, call_id))
            assert "with operator" not in subtitle(app)
            info = app.engine.call_info(call_id)
            assert info is not None and info.state == "active"

            await emu.caller_hangs_up(caller.id)
            await wait(pilot, lambda: not app.state.calls, within=20)
            assert list(app.state.ended) == [call_id]
            await wait(pilot, lambda: not PHONE_KEYS & footer_ids(app))
        assert emu.world.leftovers() == {"channels": [], "bridges": []}


class Backends:
    def __init__(self) -> None:
        self.made: list[FeedBackend] = []

    def __call__(self, _input: Any, _output: Any, rate: int, frame_ms: int) -> FeedBackend:
        backend = FeedBackend(rate, frame_ms)
        self.made.append(backend)
        return backend


async def test_voice_panel_shows_the_agents_level_beside_the_callers(
    config_path: Path, wait: Callable[..., Any]
) -> None:
    backends = Backends()
    app = AvaConsole(config_path, audio_backend_factory=backends)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("v")
        await wait(pilot, lambda: app.voice.state == "listening" and bool(backends.made), within=30)
        mic = backends.made[0]
        assert mic.played  # the greeting went to the speaker: the agent's level carries it
        mic.feed(np.zeros(16000 // 2, dtype=np.int16))  # the mic's frames bring the level events
        await wait(pilot, lambda: app.voice.agent_dbfs > -40, within=15)
        slot = str(app.screen.query_one("#voice-slot", Static).render())
        you, agent = slot.split("\n")[1].split(" agent ")
        assert you.startswith("you ") and "█" not in you  # the caller (silence)
        assert "█" in agent  # the greeting's level
        await pilot.press("e")
        await wait(pilot, lambda: app.voice.state == "idle")
