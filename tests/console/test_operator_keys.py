"""The operator on a live phone call, driven from the console's keys alone (l listen, w whisper to the agent,
W whisper to the caller, o take over, b hand back) on real sound devices: PortAudio → ALSA → a private
PulseAudio null sink whose monitor is the operator's microphone. What the operator hears and says is checked
where it really flows: the ARI emulator's RTP peer of the operator's media channel (what Asterisk would send and
receive), and the null sink (the operator's speaker), not only the engine's state."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.widgets import DataTable

from console.app import AvaConsole
from engine.voice.device_backend import import_sounddevice
from engine.voice.g711 import ulaw_decode, ulaw_encode
from tests.waiting import wait_until

ARI = Path(__file__).resolve().parents[1] / "fixtures" / "ari"
if str(ARI) not in sys.path:
    sys.path.insert(0, str(ARI))

from emulator import AriEmulator  # noqa: E402

pytestmark = [pytest.mark.audio, pytest.mark.timeout(240)]

RATE = 16000
#: Each tone is heard (or said) again when it did not come through, so it only has to outlast the 10 packets
#: (200 ms) looked for, not a loaded machine's slow start: 2 s tones cost 10 s of the test's 21.
TONE_S = 0.6
#: What the operator's speaker records while Asterisk sends the tone: the tone and the line's latency after it.
HEAR_S = TONE_S + 0.6
TONE_8K = ulaw_encode((8000 * np.sin(2 * np.pi * 440 * np.arange(round(8000 * TONE_S)) / 8000)).astype(np.int16))
TONE_16K = (8000 * np.sin(2 * np.pi * 330 * np.arange(round(RATE * TONE_S)) / RATE)).astype(np.int16)


def loud_packets(peer: Any, since: int) -> int:
    """RTP packets from the engine after ``since`` that carry sound (not the line's silence)."""
    return sum(1 for p in peer.capture[since:] if np.abs(ulaw_decode(p.payload).astype(np.int32)).max() > 1500)


def op_media(emu: AriEmulator) -> str:
    return next(c.id for c in emu.world.channels.values() if c.id.startswith("ava-op-") and not c.hung_up)


def snoop(emu: AriEmulator) -> Any:
    return next((c for c in emu.world.channels.values() if c.kind == "snoop" and not c.hung_up), None)


async def operator_hears(sd: Any, emu: AriEmulator) -> float:
    """Asterisk sends a tone on the operator's line while the null sink's monitor is recorded: the peak heard."""
    peer = emu.rtp[op_media(emu)]
    peak = 0.0
    for _ in range(5):
        rec = sd.rec(round(RATE * HEAR_S), samplerate=RATE, channels=1, dtype="int16", device="pulse")
        await peer.speak(TONE_8K)
        await asyncio.to_thread(sd.wait)
        peak = max(peak, float(np.abs(rec.astype(np.int32)).max()))
        if peak > 2000:
            break
    return peak


async def operator_says(sd: Any, emu: AriEmulator) -> int:
    """A tone is played into the operator's speaker sink, whose monitor is their microphone: the loud packets that
    reach Asterisk on the operator's line."""
    peer = emu.rtp[op_media(emu)]
    since = len(peer.capture)
    for _ in range(5):  # the tone again while its packets have not come through (a capture starting late)
        sd.play(TONE_16K, RATE, device="pulse")
        await asyncio.to_thread(sd.wait)
        with contextlib.suppress(AssertionError):
            await wait_until(lambda: loud_packets(peer, since) >= 10, within=2.0)
            break
    return loud_packets(peer, since)


def with_asterisk(config_path: Path, url: str) -> None:
    """The console's config plus the operator's sound devices (the null sink) and Asterisk (the emulator)."""
    text = config_path.read_text(encoding="utf-8")
    config_path.write_text(
        text + "softphone:\n  input_device: pulse\n  output_device: pulse\n"
        f"asterisk:\n  enabled: true\n  ari_url: {url}\n  username: ava\n"
        "  password: ${OPK_ARI_PASSWORD}\n  default_context: demo\n  rtp_port_start: 45800\n"
        "  rtp_port_end: 45899\n",
        encoding="utf-8",
    )


async def test_listen_whisper_take_over_and_hand_back_by_key(
    config_path: Path, wait: Any, pulse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sd = import_sounddevice()
    async with AriEmulator() as emu:
        monkeypatch.setenv("OPK_ARI_PASSWORD", emu.password)
        with_asterisk(config_path, emu.url)
        app = AvaConsole(config_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait(pilot, lambda: app.engine_running, within=30)
            await emu.wait_subscribers(within_s=20)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await wait(pilot, lambda: app.selected_call in app.state.calls, within=30)
            ai_call = app.selected_call
            assert app.engine is not None and app.engine.call_info(ai_call or "").channel_id == caller.id  # type: ignore[union-attr]
            app.screen.query_one("#calls", DataTable).focus()

            # l: a snoop on the caller (both ways, whispering nothing) and the call reaches the operator's speaker
            await pilot.press("l")
            phone = app.screen.phone  # type: ignore[attr-defined]
            await wait(pilot, lambda: snoop(emu) is not None and phone.operator_channel == caller.id, within=20)
            assert (snoop(emu).spy, snoop(emu).whisper) == ("both", "none")
            assert await operator_hears(sd, emu) > 2000, "the operator's speaker never played the call"

            # w: the operator's microphone is mixed into what the caller sends (the agent hears it)
            await pilot.press("w")
            await wait(pilot, lambda: snoop(emu) is not None and snoop(emu).whisper == "in", within=20)
            assert await operator_says(sd, emu) >= 10, "the operator's whisper never reached Asterisk"

            # W: into what the caller hears
            await pilot.press("W")
            await wait(pilot, lambda: snoop(emu) is not None and snoop(emu).whisper == "out", within=20)
            assert await operator_says(sd, emu) >= 10

            # o: the AI leaves the bridge, the operator's line joins the caller; both directions flow
            await pilot.press("o")

            def taken_over() -> bool:
                bridge = emu.world.bridges.get(emu.world.channels[caller.id].bridge or "")
                others = [c for c in (bridge.channels if bridge else []) if c != caller.id]
                return len(others) == 1 and others[0].startswith("ava-op-")

            await wait(pilot, lambda: taken_over() and snoop(emu) is None, within=20)
            # the AI's part ended; the call stays live under its id while the operator has it
            await wait(pilot, lambda: app.engine.call_info(ai_call or "").state == "operator", within=20)  # type: ignore[union-attr]
            assert list(app.state.calls) == [ai_call]
            assert await operator_hears(sd, emu) > 2000, "the operator does not hear the caller"
            assert await operator_says(sd, emu) >= 10, "the caller does not hear the operator"

            # b: hand back — the operator's line goes, the AI's media rejoins, a new AI conversation on the same call
            await pilot.press("b")

            def handed_back() -> bool:
                bridge = emu.world.bridges.get(emu.world.channels[caller.id].bridge or "")
                members = bridge.channels if bridge else []
                return any(c.startswith("ava-em-") for c in members) and not any(
                    c.startswith("ava-op-") for c in members
                )

            await wait(pilot, lambda: handed_back() and bool(app.state.calls), within=60)
            assert phone.operator_channel is None
            (back,) = app.state.calls
            assert back == ai_call  # the hand-back continues the same call

            def briefed() -> bool:
                return any(role == "handback" for _, role, _ in app.state.transcript(back))

            await wait(pilot, briefed, within=20)  # the console shows the note the AI came back with
            assert not any(c.id.startswith("ava-op-") and not c.hung_up for c in emu.world.channels.values())
            await emu.caller_hangs_up(caller.id)
            await wait(pilot, lambda: not app.state.calls, within=20)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []
